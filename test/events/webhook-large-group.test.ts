/**
 * No per-member work on the ingest path: a message to a 10,000-member group is one job (one
 * stream entry, the same Redis commands as for a 2-member group), expanded by the delivery
 * workers into a delivery for every offline member, carrying their cold-start badge. A worker
 * closed in the middle of that expansion loses nothing: another one, with a short claim time,
 * resumes the job from its page cursor.
 */
import { WEBHOOK_GROUP } from '@bubble/store';
import { waitFor } from '@bubble/test-utils';
import { describe, expect, it } from 'vitest';
import { TestReceiver, startWorkers, webhookTestFile } from './webhook-support.js';

const LARGE = 10_000;
const ONLINE = 50;
const file = webhookTestFile();

// g0 sends from the app; g0..g50 are online.
const largeGroup = () => file.group('large', 'g', LARGE, 1 + ONLINE);

function expectEachOnce(receiver: TestReceiver, offline: readonly string[]): void {
  const byUser = receiver.deliveriesByUser();
  expect(byUser.size).toBe(offline.length);
  for (const user of offline) expect(byUser.get(user), user).toHaveLength(1);
}

describe('a message to a 10,000-member group', () => {
  it('is one job, no more commands than for 2 members, and reaches every offline member with their cold-start badge', async () => {
    const { stack, receiver, offline } = await largeGroup();
    const { service, store, queue } = stack;
    await service.replaceMembers('small', ['s0', 's1']);
    await service.setPresence('s0', true, 60_000);
    // Loads the scripts, so neither measured call pays a NOSCRIPT.
    await service.ingestMessages('small', [{ seq: 1, from: 's0' }]);
    const costOf = async (call: () => Promise<unknown>) => {
      const before = store.commandsSent();
      await call();
      return store.commandsSent() - before;
    };
    const jobsBefore = await store.redis.xlen(queue.jobsKey);
    const small = await costOf(() => service.ingestMessages('small', [{ seq: 2, from: 's0' }]));
    const large = await costOf(() => service.ingestMessages('large', [{ seq: 1, from: 'g0' }]));
    // A small group also writes each member's activity index (per member only up to
    // BUBBLE_LARGE_GROUP); the large group writes none of its 10,000.
    expect(large).toBeLessThanOrEqual(small);
    expect(large).toBeLessThanOrEqual(6);
    expect((await store.redis.xlen(queue.jobsKey)) - jobsBefore).toBe(2);

    const startedAt = Date.now();
    await file.workers(stack, receiver.url, { minIntervalMs: 60_000 });
    await waitFor(() => receiver.deliveriesByUser().size >= offline.length + 1, {
      timeoutMs: 40_000,
      message: 'every offline member delivered',
    });
    const seconds = (Date.now() - startedAt) / 1000;
    console.info(
      `${offline.length} users delivered in ${seconds.toFixed(1)} s (${Math.round(offline.length / seconds)}/s), ${receiver.requests.length} requests`,
    );
    const byUser = receiver.deliveriesByUser();
    // s1, of the small group, is the one more.
    expect(byUser.get('s1')).toHaveLength(1);
    byUser.delete('s1');
    expect(byUser.size).toBe(offline.length);
    for (const user of offline) expect(byUser.get(user), user).toHaveLength(1);
    for (const request of receiver.requests)
      expect(request.deliveries.length).toBeLessThanOrEqual(100);
    // What a cold start computes for them now, which nothing changed since.
    for (const user of offline.filter((_, i) => i % 500 === 0)) {
      const delivered = byUser.get(user)![0]!.delivery.badge;
      const cold = await service.badge(user);
      expect({ ...delivered, computedAt: 0 }).toEqual({ ...cold, computedAt: 0 });
      expect(delivered.conversations).toEqual({ large: 1 });
    }
  }, 60_000);

  it('a worker closed mid-job loses nothing: another claims the job and resumes from its cursor', async () => {
    const { stack, receiver, offline } = await largeGroup();
    const { service, store, queue } = stack;
    const first = await startWorkers(stack, receiver.url, {
      minIntervalMs: 60_000,
      pageSize: 100,
      claimMs: 60_000,
    });
    await service.ingestMessages('large', [{ seq: 1, from: 'g0' }]);
    const jobId = await waitFor(async () => {
      const entries = await store.redis.xrange(queue.jobsKey, '-', '+');
      const id = entries[0]?.[0];
      return entries.length === 1 && id && (await queue.jobCursor(id)) !== '0' ? id : null;
    });
    await first.close();
    // Stopped between two pages: the job is still pending in the closed consumer.
    expect(await queue.jobCursor(jobId!)).not.toBe('done');
    const pending = (await store.redis.xpending(queue.jobsKey, WEBHOOK_GROUP)) as [number];
    expect(pending[0]).toBe(1);
    const deliveredByFirst = receiver.deliveriesByUser().size;
    expect(deliveredByFirst).toBeLessThan(offline.length);

    const second = await file.workers(stack, receiver.url, { minIntervalMs: 60_000, claimMs: 300 });
    await waitFor(() => receiver.deliveriesByUser().size >= offline.length, {
      timeoutMs: 40_000,
      message: 'every offline member delivered',
    });
    await waitFor(async () => (await store.redis.xlen(queue.jobsKey)) === 0, {
      message: 'the job acknowledged',
    });
    expectEachOnce(receiver, offline);
    // Resumed from its cursor: no page was scanned again (its users would be queued anew).
    await waitFor(async () => (await second.stats()).retrying === 0, { message: 'batches done' });
    expect(await second.stats()).toMatchObject({ queued: 0, retrying: 0 });
    console.info(
      `closed mid-job: the first worker delivered ${deliveredByFirst} users, the second the rest`,
    );
  }, 60_000);
});
