/**
 * A conversation is expanded at most once per minimum interval: the jobs of the messages that
 * arrive meanwhile are merged into one deferred job (maxSeq the highest, senders the union),
 * expanded at the interval's end, and every offline member still ends with their latest badge.
 * The deferred job lives in Redis: a worker closed while it waits loses nothing.
 */
import { waitFor } from '@bubble/test-utils';
import { describe, expect, it } from 'vitest';
import {
  TestReceiver,
  metricValue,
  startWorkers,
  type Workers,
  webhookTestFile,
} from './webhook-support.js';

const MEMBERS = 3_000;
const ONLINE = 20;
const file = webhookTestFile();

// t0..t19 are online and send; the others are offline.
const group = () => file.group('big', 't', MEMBERS, ONLINE);

/** Waits until every offline member's last delivery shows `unread` messages of the group. */
async function untilLatest(receiver: TestReceiver, offline: readonly string[], unread: number) {
  await waitFor(
    () => {
      const byUser = receiver.deliveriesByUser();
      return offline.every(
        (user) => byUser.get(user)?.at(-1)?.delivery.badge.conversations.big === unread,
      );
    },
    { timeoutMs: 30_000, message: `every offline member's last delivery shows ${unread}` },
  );
}

const conversationExpansions = (workers: Workers) =>
  metricValue(workers.registry, 'bubble_webhook_expansions_total', { kind: 'conversation' });
const merged = (workers: Workers) =>
  metricValue(workers.registry, 'bubble_webhook_jobs_merged_total');

describe('a large group receiving many messages within an interval', () => {
  it('is expanded once or twice, and each offline member ends with their latest badge, at most once an interval', async () => {
    const { stack, receiver, offline } = await group();
    // Long enough that a loaded machine still sends all twelve within it (3 s was not, once).
    const interval = 6_000;
    const workers = await file.workers(stack, receiver.url, { minIntervalMs: interval });
    const messages = 12;
    const sentFrom = Date.now();
    for (let seq = 1; seq <= messages; seq++) {
      await stack.service.ingestMessages('big', [{ seq, from: `t${seq % ONLINE}` }]);
    }
    // All within one interval (of the first expansion's start, a little later).
    expect(Date.now() - sentFrom).toBeLessThan(interval);
    await untilLatest(receiver, offline, messages);
    const expansions = await conversationExpansions(workers);
    console.info(
      `${messages} messages to ${MEMBERS} members: ${expansions} expansions, ${await merged(workers)} jobs merged, ${receiver.requests.length} requests`,
    );
    // The first message's job, then the one the other eleven were merged into.
    expect(expansions).toBe(2);
    expect(await merged(workers)).toBe(messages - 1);
    const byUser = receiver.deliveriesByUser();
    for (const user of offline) {
      const deliveries = byUser.get(user)!;
      expect(deliveries.length, user).toBeLessThanOrEqual(2);
      for (let i = 1; i < deliveries.length; i++)
        expect(deliveries[i]!.at - deliveries[i - 1]!.at, user).toBeGreaterThanOrEqual(
          interval - 50,
        );
    }
    // What a cold start computes now, which nothing changed since.
    for (const user of offline.filter((_, i) => i % 300 === 0)) {
      const delivered = byUser.get(user)!.at(-1)!.delivery.badge;
      expect({ ...delivered, computedAt: 0 }).toEqual({
        ...(await stack.service.badge(user)),
        computedAt: 0,
      });
    }
    expect(await workers.stats()).toMatchObject({ jobs: 0, deferred: 0 });
  }, 60_000);

  it('a worker closed while a merged job is deferred loses nothing: another one expands it', async () => {
    const { stack, receiver, offline } = await group();
    const first = await startWorkers(stack, receiver.url, { minIntervalMs: 3_000 });
    await stack.service.ingestMessages('big', [{ seq: 1, from: 't1' }]);
    await waitFor(async () => (await conversationExpansions(first)) === 1, {
      message: 'the first message expanded',
    });
    await waitFor(async () => (await stack.store.redis.xlen(stack.queue.jobsKey)) === 0, {
      message: 'the first job acknowledged',
    });
    await stack.service.ingestMessages('big', [{ seq: 2, from: 't2' }]);
    await stack.service.ingestMessages('big', [{ seq: 3, from: 't3' }]);
    await waitFor(async () => (await merged(first)) === 2, { message: 'two jobs merged' });
    await first.close();
    // Acknowledged: only the deferred job holds the two messages now.
    expect(await stack.store.redis.xlen(stack.queue.jobsKey)).toBe(0);
    expect((await first.stats()).deferred).toBe(1);

    const second = await file.workers(stack, receiver.url, { minIntervalMs: 3_000, claimMs: 300 });
    await untilLatest(receiver, offline, 3);
    expect(await conversationExpansions(second)).toBe(1);
    expect(await second.stats()).toMatchObject({ jobs: 0, deferred: 0 });
  }, 60_000);
});
