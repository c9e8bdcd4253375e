/**
 * `bubble bench ingest-stream` and `bubble bench webhook` at tiny sizes, against the built
 * gateway: the figures bench.md names are in the JSON, every post of both ingest phases is in
 * its author's window, and no offline user's last delivered badge differs from the stored one.
 * Speeds are not asserted (the machine is shared); docs/benchmarks.md holds those.
 */
import { describe, expect, it } from 'vitest';
import { benchIngestStream } from '../../packages/bench/src/ingest-stream.js';
import { benchWebhook } from '../../packages/bench/src/webhook.js';

describe('bench ingest-stream and webhook (tiny sizes)', () => {
  it('ingest-stream applies every post appended to the stream and posted over HTTP', async () => {
    const figures = await benchIngestStream({
      authors: 300,
      windowPosts: 1000,
      connections: 2,
      batch: 100,
      warmupSeconds: 0.5,
      seconds: 1,
      drainTimeoutMs: 30_000,
    });
    for (const key of ['eventsPerSec', 'httpPostsPerSec', 'streamRatio', 'lagMaxMs']) {
      expect(typeof figures[key], key).toBe('number');
    }
    const http = figures.http as { accepted: number; missing: number };
    const stream = figures.stream as { appended: number; applied: number; missing: number };
    expect(http.accepted).toBeGreaterThan(0);
    expect(http.missing).toBe(0);
    expect(stream.appended).toBe(http.accepted);
    expect(stream.missing).toBe(0);
    expect(stream.applied).toBe(stream.appended);
  }, 60_000);

  it('webhook loses no user through 503s and keeps every request signed and keyed', async () => {
    const figures = await benchWebhook({
      users: 400,
      smallGroups: 40,
      largeGroups: [200],
      messagesPerSec: 100,
      largeGroupEveryMs: 500,
      minIntervalMs: 300,
      okSeconds: 2,
      failingSeconds: 2,
      failShare: 0.3,
      drainTimeoutMs: 20_000,
    });
    for (const key of [
      'deliveriesPerSec',
      'usersPerDelivery',
      'coalescedShare',
      'retriedShare',
      'lost',
      'intervalViolationMs',
    ]) {
      expect(typeof figures[key], key).toBe('number');
    }
    const receiver = figures.receiver as { userDeliveries: number; faults: Record<string, number> };
    expect(receiver.userDeliveries).toBeGreaterThan(0);
    expect(figures.retriedShare).toBeGreaterThan(0);
    expect(receiver.faults).toEqual({
      badSignature: 0,
      keyMismatch: 0,
      badBody: 0,
      duplicateAccepted: 0,
      tooManyUsers: 0,
    });
    // A member's own message marks the conversation read, and the delivery workers skip the
    // senders of a job: such a fall may stay undelivered (lostByKind.missedFallOnly, in the
    // report). A message the phone never counted is a loss whatever the design.
    expect((figures.lostByKind as { missedRise: number }).missedRise).toBe(0);
  }, 60_000);
});
