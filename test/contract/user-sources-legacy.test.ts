/**
 * An upgrade keeps the follow graph: RedisStore.convertLegacyFollows turns the format-1 SETs
 * (`{u:<user>}:follows`, `:topics`) into format-2 lists (RedisKeys' header), a SCAN page at a
 * time, on one redis-server and on a 3-master Redis Cluster (every master scanned). Also: what a
 * follow list costs on the Redis the tests run (≤ 16 B a follow at 243 follows of 6-byte ids).
 */
import { RedisStore, type RedisTarget } from '@bubble/store';
import { startRedisServer, uniquePrefix, type RedisServerHandle } from '@bubble/test-utils';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useRedisCluster } from '../support/redis-cluster.js';
import { sorted } from '../support/store-contract.js';

const POOLS = 16;

/** Steps until done (bounded), the SETs converted summed. */
async function convertAll(store: RedisStore, batch: number): Promise<number> {
  let converted = 0;
  for (let step = 0; step < 10_000; step++) {
    const result = await store.convertLegacyFollows(batch);
    converted += result.converted;
    if (result.done) return converted;
  }
  throw new Error('convertLegacyFollows did not finish in 10,000 steps');
}

function conversionTests(target: () => RedisTarget): void {
  it('converts every legacy SET, merges a list written since, and a second pass finds nothing', async () => {
    const prefix = uniquePrefix('legacy');
    const store = new RedisStore({
      ...target(),
      keyPrefix: prefix,
      pools: POOLS,
      sourcesOnDemand: true,
    });
    const other = new RedisStore({ ...target(), keyPrefix: uniquePrefix('other'), pools: POOLS });
    try {
      const { redis, keys } = store;
      const users = Array.from({ length: 60 }, (_, i) => `user${i}`);
      for (const [i, user] of users.entries()) {
        await redis.sadd(keys.legacyFollows(user), `a${i}`, `b${i}`, 'shared');
        if (i % 3 === 0) await redis.sadd(keys.legacyTopics(user), `t${i}`);
      }
      await redis.sadd(keys.legacyTopics('topicsOnly'), 'owls');
      // Written after the upgrade, before the conversion: kept, the legacy ids added after.
      await store.sources.install([{ user: 'user1', answer: { follows: ['new'], topics: [] } }], {
        follows: 10,
        topics: 10,
      });
      // Another prefix's legacy keys are not this store's to convert.
      await other.redis.sadd(other.keys.legacyFollows('user0'), 'x');

      expect(await convertAll(store, 7)).toBe(60 + 20 + 1);
      for (const [i, user] of users.entries()) {
        const follows = await store.follows.list(user);
        if (user === 'user1') expect(follows[0]).toBe('new');
        expect(sorted(follows)).toEqual(
          sorted([`a${i}`, `b${i}`, 'shared', ...(user === 'user1' ? ['new'] : [])]),
        );
        expect(await store.topics.list(user)).toEqual(i % 3 === 0 ? [`t${i}`] : []);
        expect(await redis.exists(keys.legacyFollows(user), keys.legacyTopics(user))).toBe(0);
      }
      expect(await store.topics.list('topicsOnly')).toEqual(['owls']);
      // Held now (their authors list exists); a user with topics only had no authors SET.
      expect(await store.sources.held(['user0', 'user59', 'topicsOnly'])).toEqual([
        true,
        true,
        false,
      ]);
      expect(await other.redis.type(other.keys.legacyFollows('user0'))).toBe('set');
      expect(await store.convertLegacyFollows(7)).toEqual({ converted: 0, done: true });

      const again = new RedisStore({ ...target(), keyPrefix: prefix, pools: POOLS });
      try {
        expect(await convertAll(again, 100)).toBe(0);
      } finally {
        await again.close();
      }
      await expect(store.convertLegacyFollows(0)).rejects.toThrow(/batch/);
    } finally {
      await Promise.all([store.close(), other.close()]);
    }
  });
}

describe('legacy follow sets converted [redis]', () => {
  let server: RedisServerHandle | undefined;
  beforeAll(async () => {
    server = await startRedisServer();
  });
  afterAll(async () => {
    await server?.stop();
  });
  conversionTests(() => ({ url: server!.url }));

  it('a follow list costs ≤ 16 B a follow at 243 follows of 6-byte ids (MEMORY USAGE)', async () => {
    const store = new RedisStore({ url: server!.url, keyPrefix: 'ub', pools: POOLS });
    try {
      const user = 'u1234567';
      const ids = Array.from({ length: 243 }, (_, i) => `a${String(i).padStart(5, '0')}`);
      expect(await store.follows.replace(user, ids)).toBe(true);
      const bytes = Number(
        await store.redis.call('MEMORY', 'USAGE', store.keys.follows(user), 'SAMPLES', '0'),
      );
      expect(bytes / ids.length).toBeLessThanOrEqual(16);
      // One at a time lands on the same string: SET writes it at its exact length.
      await store.follows.replace(user, []);
      for (const id of ids) await store.follows.follow(user, id, 2000);
      const grown = Number(
        await store.redis.call('MEMORY', 'USAGE', store.keys.follows(user), 'SAMPLES', '0'),
      );
      expect(grown / ids.length).toBeLessThanOrEqual(16);
      await store.follows.replace(user, []);
    } finally {
      await store.close();
    }
  });
});

describe('legacy follow sets converted [redis cluster]', () => {
  const cluster = useRedisCluster();
  conversionTests(() => ({ clusterNodes: cluster.nodes }));
});
