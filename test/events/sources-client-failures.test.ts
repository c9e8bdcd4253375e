/**
 * The sources client when the endpoint misbehaves: timeouts, retries within a deadline, the
 * circuit breaker, and answers that break the grammar (refused for their user only).
 */
import { checkSourcesEntry } from '@bubble/events';
import { waitFor } from '@bubble/test-utils';
import { describe, expect, it } from 'vitest';
import { addUsers, CAPS, metricValue, startRig } from './sources-client-support.js';

const UNREACHABLE = { ok: false, reason: 'unreachable' };
const INVALID = { ok: false, reason: 'invalid' };
const PAUSED = { ok: false, reason: 'paused' };

describe('sources client: failures and retries', () => {
  it('a request without a whole answer within the timeout is unreachable', async () => {
    const { client } = await startRig(
      { mode: { kind: 'hang' } },
      { timeoutMs: 150, maxAttempts: 1 },
    );
    expect((await client.fetch(['t1'])).get('t1')).toEqual(UNREACHABLE);
    expect(client.stats().requests.timeout).toBe(1);
  });

  it('retries a failed request with backoff and answers once the endpoint does', async () => {
    const { endpoint, client, lines } = await startRig({}, { maxAttempts: 4 });
    addUsers(endpoint, 'r', 2);
    endpoint.setMode({ kind: 'fail', status: 503 }, 2);
    const outcomes = await client.fetch(['r0', 'r1']);
    expect(outcomes.get('r0')).toEqual({
      ok: true,
      answer: { follows: ['r0.a', 'r0.b'], topics: ['r0.t'] },
    });
    expect(endpoint.requests.map((r) => r.mode)).toEqual(['fail', 'fail', 'ok']);
    expect(client.stats().requests).toMatchObject({ ok: 1, error: 2 });
    // Two failures within the throttle's window: one log line.
    expect(lines.filter((l) => l.msg.includes('request to the endpoint failed'))).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 'warn', result: 'error', error: 'HTTP 503', users: 2 });
  });

  it('without a deadline gives up after maxAttempts', async () => {
    const { endpoint, client } = await startRig({ mode: { kind: 'fail' } }, { maxAttempts: 3 });
    expect((await client.fetch(['g1'])).get('g1')).toEqual(UNREACHABLE);
    expect(endpoint.requests).toHaveLength(3);
  });

  it('starts no retry after the deadline', async () => {
    // The backoff's jitter at its top: the retry would start 990 ms later, past the deadline.
    const { endpoint, client } = await startRig(
      { mode: { kind: 'fail' } },
      { retryBaseMs: 1_000, retryMaxMs: 1_000, random: () => 0.99 },
    );
    const outcomes = await client.fetch(['d1'], { deadline: Date.now() + 300 });
    expect(outcomes.get('d1')).toEqual(UNREACHABLE);
    expect(endpoint.requests).toHaveLength(1);
  });

  it('a waiter with a deadline lets go of a shared fetch that a waiter without one keeps retrying', async () => {
    const { endpoint, client } = await startRig(
      { mode: { kind: 'fail' } },
      { retryBaseMs: 200, retryMaxMs: 200, random: () => 0.99, maxAttempts: 2 },
    );
    addUsers(endpoint, 'w', 1);
    const background = client.fetch(['w0']);
    const urgent = await client.fetch(['w0'], { deadline: Date.now() + 50 });
    expect(urgent.get('w0')).toEqual(UNREACHABLE);
    expect(endpoint.requests).toHaveLength(1);
    endpoint.setMode({ kind: 'ok' });
    expect((await background).get('w0')?.ok).toBe(true);
    expect(endpoint.requests).toHaveLength(2);
  });
});

describe('sources client: circuit breaker', () => {
  it('opens after repeated failures, answers paused without a request, and closes after a probe succeeds', async () => {
    const { endpoint, client, registry, lines, skip } = await startRig(
      { mode: { kind: 'fail' } },
      { maxAttempts: 1, breaker: { failures: 3, pauseMs: 5_000, maxPauseMs: 20_000 } },
    );
    addUsers(endpoint, 'b', 10);
    for (const user of ['b0', 'b1', 'b2'])
      expect((await client.fetch([user])).get(user)).toEqual(UNREACHABLE);
    expect(client.stats().breakerOpen).toBe(1);
    expect(await metricValue(registry, 'bubble_sources_breaker_open')).toBe(1);
    const opened = lines.find((l) => l.msg.includes('circuit breaker open'));
    expect(opened).toMatchObject({ level: 'warn', pauseMs: 5_000, reason: 'HTTP 500' });

    endpoint.setMode({ kind: 'ok' });
    expect((await client.fetch(['b3', 'b4'])).get('b3')).toEqual(PAUSED);
    expect(endpoint.requests).toHaveLength(3);
    expect(client.stats().users.paused).toBe(2);

    // The pause is over: one probe, and what arrives meanwhile waits for its verdict.
    endpoint.setMode({ kind: 'slow', delayMs: 300 });
    skip(5_000);
    const probe = client.fetch(['b5']);
    await waitFor(() => endpoint.inFlight === 1);
    const behind = client.fetch(['b6', 'b7']);
    expect((await probe).get('b5')?.ok).toBe(true);
    expect([...(await behind).values()].every((o) => o.ok)).toBe(true);
    expect(endpoint.requests.slice(3).map((r) => r.users)).toEqual([['b5'], ['b6', 'b7']]);
    expect(endpoint.maxInFlight).toBe(1);
    expect(client.stats().breakerOpen).toBe(0);
    expect(lines.find((l) => l.msg.includes('circuit breaker closed'))).toMatchObject({
      level: 'info',
    });
  });

  it('a failed probe pauses the endpoint again for twice as long', async () => {
    const { endpoint, client, lines, skip } = await startRig(
      { mode: { kind: 'fail' } },
      { maxAttempts: 1, breaker: { failures: 2, pauseMs: 1_000, maxPauseMs: 1_500 } },
    );
    await client.fetch(['p1']);
    await client.fetch(['p2']);
    skip(1_000);
    expect((await client.fetch(['p3'])).get('p3')).toEqual(UNREACHABLE);
    expect(lines.at(-1)).toMatchObject({
      pauseMs: 1_500,
      msg: expect.stringContaining('probe failed'),
    });
    skip(1_000);
    expect((await client.fetch(['p4'])).get('p4')).toEqual(PAUSED);
    expect(endpoint.requests).toHaveLength(3);
    endpoint.setMode({ kind: 'ok' });
    skip(500);
    expect((await client.fetch(['p5'])).get('p5')?.ok).toBe(true);
    expect(client.stats().breakerOpen).toBe(0);
  });

  it('what waits behind a probe that fails is paused, without a request', async () => {
    const { endpoint, client, skip } = await startRig(
      { mode: { kind: 'fail' } },
      { maxAttempts: 1, timeoutMs: 150, breaker: { failures: 1, pauseMs: 1_000 } },
    );
    expect((await client.fetch(['f1'])).get('f1')).toEqual(UNREACHABLE);
    endpoint.setMode({ kind: 'hang' });
    skip(1_000);
    const probe = client.fetch(['f2']);
    await waitFor(() => endpoint.inFlight === 1);
    const behind = client.fetch(['f3']);
    expect((await probe).get('f2')).toEqual(UNREACHABLE);
    expect((await behind).get('f3')).toEqual(PAUSED);
    expect(endpoint.requests.map((r) => r.users)).toEqual([['f1'], ['f2']]);
    expect(client.stats()).toMatchObject({
      requests: { error: 1, timeout: 1 },
      users: { failed: 2, paused: 1 },
      breakerOpen: 1,
    });
  });

  it('a fetch waiting for a retry when the breaker opens ends at once', async () => {
    const { endpoint, client } = await startRig(
      { mode: { kind: 'fail' } },
      { retryBaseMs: 60_000, retryMaxMs: 60_000, random: () => 0.99, breaker: { failures: 2 } },
    );
    const waiting = client.fetch(['e1']);
    await waitFor(() => client.stats().requests.error === 1);
    expect(client.stats().usersWaiting).toBe(1);
    await client.fetch(['e2']);
    expect((await waiting).get('e1')).toEqual(UNREACHABLE);
    expect(client.stats()).toMatchObject({ breakerOpen: 1, usersWaiting: 0 });
    expect(endpoint.requests).toHaveLength(2);
  });
});

describe('sources client: bad answers', () => {
  it('an answer that is not JSON is unreachable for the whole batch', async () => {
    const { endpoint, client } = await startRig({ mode: { kind: 'garbage' } }, { maxAttempts: 1 });
    addUsers(endpoint, 'x', 2);
    expect(await client.fetch(['x0', 'x1'])).toEqual(
      new Map([
        ['x0', UNREACHABLE],
        ['x1', UNREACHABLE],
      ]),
    );
    expect(client.stats().requests.invalid).toBe(1);
  });

  it('an answer over maxBodyBytes is refused', async () => {
    const { endpoint, client } = await startRig({}, { maxAttempts: 1, maxBodyBytes: 1_000 });
    endpoint.graph.set('big', {
      follows: Array.from({ length: 100 }, (_, i) => `author-${i}`),
      topics: [],
    });
    expect((await client.fetch(['big'])).get('big')).toEqual(UNREACHABLE);
    expect(client.stats().requests.invalid).toBe(1);
  });

  it("refuses only the entry that breaks the caps or the grammar, and logs the user's refusal", async () => {
    const { endpoint, client, lines } = await startRig();
    const users = addUsers(endpoint, 'v', 4);
    endpoint.setMode({ kind: 'over-cap', cap: CAPS.follows, users: ['v0'] });
    const overCap = await client.fetch(users.slice(0, 2));
    expect(overCap.get('v0')).toEqual(INVALID);
    expect(overCap.get('v1')?.ok).toBe(true);
    endpoint.setMode({ kind: 'bad-ids', users: ['v2'] });
    const badIds = await client.fetch(users.slice(2));
    expect(badIds.get('v2')).toEqual(INVALID);
    expect(badIds.get('v3')?.ok).toBe(true);
    const refused = lines.filter((l) => l.msg.includes('was refused'));
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatchObject({
      level: 'warn',
      user: 'v0',
      why: 'follows holds 51 ids, over the cap of 50',
    });
    expect(client.stats().users).toMatchObject({ ok: 2, invalid: 2 });
  });

  it('takes duplicates once, ignores unknown keys and null positions, refuses bad positions', async () => {
    const { endpoint, client } = await startRig();
    const graph = endpoint.graph as Map<string, unknown>;
    graph.set('dup', { follows: ['a', 'b', 'a'], topics: ['t', 't'], extra: 1, readAt: null });
    graph.set('neg', { follows: [], topics: [], readAt: -1 });
    graph.set('zero', { follows: [], topics: [], noticesSeen: 0 });
    graph.set('frac', { follows: [], topics: [], readAt: 1.5 });
    // A cap counts distinct ids: 51 entries, 50 distinct, is within the cap.
    const fifty = Array.from({ length: 50 }, (_, i) => `f${i}`);
    graph.set('full', { follows: [...fifty, 'f0'], topics: [] });
    const outcomes = await client.fetch(['dup', 'neg', 'zero', 'frac', 'full']);
    expect(outcomes.get('dup')).toEqual({
      ok: true,
      answer: { follows: ['a', 'b'], topics: ['t'] },
    });
    expect(outcomes.get('neg')).toEqual(INVALID);
    expect(outcomes.get('zero')).toEqual(INVALID);
    expect(outcomes.get('frac')).toEqual(INVALID);
    expect(outcomes.get('full')).toEqual({ ok: true, answer: { follows: fifty, topics: [] } });
  });

  it('checks one entry against the grammar', () => {
    expect(checkSourcesEntry(undefined, CAPS)).toEqual({
      ok: true,
      answer: { follows: [], topics: [] },
    });
    expect(checkSourcesEntry([], CAPS)).toEqual({ ok: false, why: 'the entry is not an object' });
    expect(checkSourcesEntry({ follows: [] }, CAPS)).toEqual({
      ok: false,
      why: 'topics is not an array',
    });
    expect(checkSourcesEntry({ follows: [7], topics: [] }, CAPS)).toEqual({
      ok: false,
      why: 'follows holds an id that breaks the id grammar',
    });
    expect(checkSourcesEntry({ follows: [], topics: [], noticesSeen: 3, readAt: 0 }, CAPS)).toEqual(
      {
        ok: true,
        answer: { follows: [], topics: [], noticesSeen: 3, readAt: 0 },
      },
    );
  });
});
