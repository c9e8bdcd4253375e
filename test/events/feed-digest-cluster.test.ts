/**
 * The feed digest on a 3-master Redis Cluster: the pass (its state beside the last-sight index
 * in the {g} slot), two digests sharing it, the users' reads each in their own slot, and the
 * changed users made due in {w} and delivered to a real receiver.
 */
import { BadgeService } from '@bubble/badges';
import { DAY_MS } from '@bubble/protocol';
import { redisOfflineJobs, startFeedDigest } from '@bubble/events';
import { RedisStore, RedisWebhookQueue } from '@bubble/store';
import { freePort, uniquePrefix, waitFor } from '@bubble/test-utils';
import { afterEach, describe, expect, it } from 'vitest';
import { useRedisCluster } from '../support/redis-cluster.js';
import { TestReceiver, membersNamed, startWorkers, type Stack } from './webhook-support.js';

describe('feed digest [3-master Redis Cluster]', () => {
  const cluster = useRedisCluster();
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function stackOn(prefix: string): Promise<Stack> {
    const store = new RedisStore({ clusterNodes: cluster.nodes, keyPrefix: prefix, pools: 100 });
    await store.syncClock();
    cleanups.push(() => store.close());
    const queue = new RedisWebhookQueue(store.redis, store.keys);
    const service = new BadgeService(
      store,
      store.clock,
      {},
      { offlineJobs: redisOfflineJobs(queue, ['feed']) },
    );
    return { store, service, queue, close: () => store.close() };
  }

  it('delivers the feed of recently seen offline users, the pass shared by two digests', async () => {
    const prefix = uniquePrefix('fdc');
    const stack = await stackOn(prefix);
    const other = await stackOn(prefix);
    const receiver = await new TestReceiver(await freePort()).start();
    cleanups.push(() => receiver.stop());
    const users = membersNamed('cf', 40);
    await Promise.all(users.map((user) => stack.service.replaceFollows(user, ['novelist'])));
    await Promise.all(users.map((user) => stack.service.serveBadge(user, { seen: true })));
    await stack.service.replaceFollows('gone', ['novelist']);
    await stack.store.marks.see('gone', stack.store.clock.now() - 5 * DAY_MS, async () => 0);
    const workers = await startWorkers(stack, receiver.url);
    cleanups.push(() => workers.close());
    const options = {
      intervalMs: 2_000,
      days: 3,
      rate: 10_000,
      pageSize: 5,
      webhookMinIntervalMs: 300,
      queueMax: 100_000,
    };
    const digests = [
      await startFeedDigest(stack.store, options),
      await startFeedDigest(other.store, options),
    ];
    cleanups.push(async () => {
      for (const digest of digests) await digest.close();
    });

    await stack.service.ingestPosts([
      { author: 'novelist', id: 'chapter1', ts: stack.store.clock.now() },
    ]);
    const feedOf = (user: string) =>
      (receiver.deliveriesByUser().get(user) ?? []).filter(({ delivery }) =>
        delivery.reasons.includes('feed'),
      );
    await waitFor(() => users.every((user) => feedOf(user).length > 0), {
      timeoutMs: 20_000,
      message: 'every recently seen follower delivered',
    });
    // The one post, counted once: every delivery carries it.
    for (const user of users) {
      for (const { delivery } of feedOf(user)) expect(delivery.badge.feed).toBe(1);
    }
    expect(receiver.deliveriesByUser().has('gone')).toBe(false);
    // Both take pages of the shared passes (one may take a whole short pass before the other
    // claims: the passes go on every interval).
    await waitFor(() => digests.every((digest) => digest.stats().users > 0), {
      timeoutMs: 20_000,
      message: 'both digests took pages',
    });
  }, 60_000);
});
