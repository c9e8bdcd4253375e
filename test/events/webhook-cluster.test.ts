/**
 * Offline delivery on a 3-master Redis Cluster, end to end: a conversation's offline members,
 * in pools on every node, are expanded, checked for presence (one script call per pool), given
 * their cold-start badges (a call per user and per conversation, each in its slot) and
 * delivered with the count the conversation shows them.
 */
import { BadgeService } from '@bubble/badges';
import { redisOfflineJobs } from '@bubble/events';
import { RedisStore, RedisWebhookQueue } from '@bubble/store';
import { freePort, uniquePrefix, waitFor } from '@bubble/test-utils';
import { afterEach, describe, expect, it } from 'vitest';
import { useRedisCluster } from '../support/redis-cluster.js';
import { TestReceiver, membersNamed, startWorkers, type Stack } from './webhook-support.js';

describe('offline delivery [3-master Redis Cluster]', () => {
  const cluster = useRedisCluster();
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it('delivers every offline member of a conversation with their count', async () => {
    const store = new RedisStore({
      clusterNodes: cluster.nodes,
      keyPrefix: uniquePrefix('whc'),
      pools: 100,
    });
    await store.syncClock();
    cleanups.push(() => store.close());
    const queue = new RedisWebhookQueue(store.redis, store.keys);
    const service = new BadgeService(
      store,
      store.clock,
      {},
      { offlineJobs: redisOfflineJobs(queue, ['conversations']) },
    );
    const stack: Stack = { store, service, queue, close: () => store.close() };
    const receiver = await new TestReceiver(await freePort()).start();
    cleanups.push(() => receiver.stop());
    const members = membersNamed('cm', 60);
    await service.replaceMembers('crowd', members);
    await service.replaceMembers('pair', ['cm1', 'cm2']);
    await service.ingestMessages('pair', [{ seq: 1, from: 'cm1' }]);
    // cm0 is online: their badge goes live, not to the phone.
    await service.setPresence('cm0', true, 60_000);
    const workers = await startWorkers(stack, receiver.url);
    cleanups.push(() => workers.close());

    await service.ingestMessages('crowd', [{ seq: 1, from: 'cm0' }]);
    const offline = members.slice(1);
    const expected = (user: string): Record<string, number> =>
      user === 'cm2' ? { crowd: 1, pair: 1 } : { crowd: 1 };
    const last = (user: string) => receiver.deliveriesByUser().get(user)?.at(-1)?.delivery;
    const sorted = (counts: Record<string, number> | undefined) =>
      JSON.stringify(Object.entries(counts ?? {}).sort());
    await waitFor(
      () =>
        offline.every((user) => sorted(last(user)?.badge.conversations) === sorted(expected(user))),
      { timeoutMs: 20_000, message: 'every offline member delivered their count' },
    );
    expect(receiver.deliveriesByUser().has('cm0')).toBe(false);
    expect(receiver.requests.every((r) => r.signatureValid)).toBe(true);
    // No id accepted twice.
    const ids = receiver.accepted().map((r) => r.id);
    expect(new Set(ids).size).toBe(ids.length);
  }, 60_000);
});
