/**
 * The cluster store contract (packages/store/src/change-log, presence, fenced-badges): the Redis implementations once more on a real 3-master Redis Cluster. The other parts:
 * test/contract/cluster-store-*.test.ts.
 */
import type { BadgeChange } from '@bubble/protocol';
import { LOG_START, RedisKeys } from '@bubble/store';
import { uniquePrefix, waitFor } from '@bubble/test-utils';
import { describe, expect, it } from 'vitest';
import { RedisChangeLog } from '../../packages/store/src/change-log/redis-change-log.js';
import { RedisFencedBadges } from '../../packages/store/src/fenced-badges/redis-fenced-badges.js';
import { RedisPresence } from '../../packages/store/src/presence/redis-presence.js';
import { T0 } from '../support/engines.js';
import { useRedisCluster } from '../support/redis-cluster.js';
import { listenAsGateways, offline, online, usersOf } from '../support/cluster-store-contract.js';

describe('cluster store on a 3-master Redis Cluster', () => {
  const POOLS = 8;
  const cluster = useRedisCluster();

  it('presence, change logs and sharded fenced badges work across shards', async () => {
    const keys = new RedisKeys(uniquePrefix('cluster'), POOLS);
    const log = new RedisChangeLog({ client: cluster.client, keys });
    const presence = new RedisPresence({ client: cluster.client, keys, log });
    const badges = new RedisFencedBadges({ client: cluster.client, keys, sharded: true });
    const pools = Array.from({ length: POOLS }, (_, pool) => pool);
    const usersByPool = pools.map((pool) => usersOf(pool, 2, POOLS));

    // Presence: one call spanning every pool.
    const everyone = usersByPool.flat();
    const changes = await presence.setOnline(
      everyone.map((user, i) => ({ user, ttlMs: i % 2 === 0 ? 1_000 : 60_000 })),
    );
    expect(changes).toEqual(everyone.map((user) => ({ user, changed: true })));
    expect(await presence.poolSizes()).toEqual(pools.map(() => 2));
    // Each pool's shard decides on its own clock when its users lapse.
    await waitFor(async () => (await presence.poolSizes()).every((n) => n === 1), {
      timeoutMs: 10_000,
    });
    expect(await presence.members(5)).toEqual([usersByPool[5]![1]]);
    expect(await presence.expire(5, 10)).toEqual([usersByPool[5]![0]]);
    expect(await presence.setOffline(usersByPool[6]![1]!)).toBe(true);

    // Change logs: every pool's log read in one batch.
    await log.appendPoolEvents(7, [{ kind: 'cursor', user: usersByPool[7]![0]!, readAt: T0 }]);
    const reads = await log.readPoolEvents(
      pools.map((pool) => ({ pool, after: LOG_START })),
      100,
    );
    for (const pool of pools) {
      const expected = usersByPool[pool]!.map(online);
      if (pool === 5) expected.push(offline(usersByPool[5]![0]!));
      if (pool === 6) expected.push(offline(usersByPool[6]![1]!));
      if (pool === 7) expected.push({ kind: 'cursor', user: usersByPool[7]![0]!, readAt: T0 });
      expect(
        reads.get(pool)!.entries.map((entry) => entry.event),
        `pool ${pool}`,
      ).toEqual(expected);
      expect(reads.get(pool)!.gap).toBe(false);
    }
    await log.appendPostEvents([{ kind: 'post', author: 'a', id: 'p', ts: T0 }]);
    expect((await log.readPostEvents(LOG_START, 10)).entries.map((entry) => entry.event)).toEqual([
      { kind: 'post', author: 'a', id: 'p', ts: T0 },
    ]);

    // Fenced badges, published with SPUBLISH on each pool's own shard.
    const received = new Map<number, BadgeChange[]>();
    const stop = await badges.subscribe(pools, (pool, batch) => received.set(pool, batch));
    await Promise.all(pools.map((pool) => cluster.client.set(keys.fence(pool), 2)));
    const results = await Promise.all(
      pools.map((pool) =>
        badges.saveFenced(
          pool,
          2,
          usersByPool[pool]!.map((user) => ({ user, fields: { feed: pool + 1 } })),
          T0,
          { stamps: true },
        ),
      ),
    );
    expect(results.every((result) => result.accepted)).toBe(true);
    // A gateway's (unfenced) write in each pool is what its owner hears of.
    await Promise.all(
      pools.map((pool) => badges.saveUnfenced(usersByPool[pool]![0]!, { feed: pool + 100 }, T0)),
    );
    await waitFor(() => received.size === POOLS, { message: 'every pool published its changes' });
    for (const pool of pools) {
      expect(
        received.get(pool)!.map(({ user, fields, version }) => ({ user, fields, version })),
      ).toEqual([{ user: usersByPool[pool]![0], fields: { feed: pool + 100 }, version: 2 }]);
    }
    expect(
      await badges.saveFenced(3, 1, [{ user: usersByPool[3]![0]!, fields: {} }], T0, {
        stamps: true,
      }),
    ).toEqual({ accepted: false, changed: 0 });
    expect(await badges.staleWritesRejected(3)).toBe(1);
    await stop();

    // Plain PUBLISH works on a Cluster too (broadcast to every node).
    const broadcast = new RedisFencedBadges({ client: cluster.client, keys, sharded: false });
    const heard: Array<[number, BadgeChange[]]> = [];
    const stopBroadcast = await broadcast.subscribe([4], (pool, batch) =>
      heard.push([pool, batch]),
    );
    const [user4] = usersByPool[4]!;
    await broadcast.saveUnfenced(user4!, { feed: 50 }, T0 + 1);
    await waitFor(() => heard.length === 1);
    expect(heard[0]![1].map(({ user, version }) => ({ user, version }))).toEqual([
      { user: user4, version: 3 },
    ]);
    await stopBroadcast();

    // The pools really are spread over the shards.
    const mastersWithKeys = await Promise.all(
      cluster.client.nodes('master').map(async (node) => (await node.dbsize()) > 0),
    );
    expect(mastersWithKeys.filter(Boolean).length).toBeGreaterThanOrEqual(2);
  });

  it('list signals reach the gateway holding each user, over sharded pub/sub on every shard', async () => {
    const keys = new RedisKeys(uniquePrefix('cluster-lists'), POOLS);
    const badges = new RedisFencedBadges({ client: cluster.client, keys, sharded: true });
    const pools = Array.from({ length: POOLS }, (_, pool) => pool);
    const firsts = pools.map((pool) => usersOf(pool, 1, POOLS)[0]!);
    const heard: string[] = [];
    const stop = await badges.subscribeListSignals('g1', (users) => heard.push(...users));
    await badges.route('g1', firsts, 10_000);
    await badges.signalLists([...firsts, ...pools.map((pool) => usersOf(pool, 1, POOLS, 'x')[0]!)]);
    await waitFor(() => heard.length === POOLS, { message: 'g1 heard of its user in every pool' });
    expect(heard.sort()).toEqual([...firsts].sort());
    await stop();
  });

  it('routes changes to the gateway holding each user, over sharded pub/sub on every shard', async () => {
    const keys = new RedisKeys(uniquePrefix('cluster-routes'), POOLS);
    const badges = new RedisFencedBadges({ client: cluster.client, keys, sharded: true });
    const pools = Array.from({ length: POOLS }, (_, pool) => pool);
    const usersByPool = pools.map((pool) => usersOf(pool, 2, POOLS));
    const { heard, stops } = await listenAsGateways(badges, ['g1', 'g2'], 'feed');
    // g1 holds the first user of every pool, g2 the second; nobody is told of anyone else.
    const firsts = usersByPool.map((users) => users[0]!);
    const seconds = usersByPool.map((users) => users[1]!);
    await badges.route('g1', firsts, 10_000);
    await badges.route('g2', seconds, 10_000);
    await Promise.all(pools.map((pool) => cluster.client.set(keys.fence(pool), 1)));
    const unrouted = pools.map((pool) => usersOf(pool, 1, POOLS, 'nobody')[0]!);
    const saved = await Promise.all(
      pools.map((pool) =>
        badges.saveFenced(
          pool,
          1,
          [...usersByPool[pool]!, unrouted[pool]!].map((user) => ({
            user,
            fields: { feed: pool + 1 },
          })),
          T0,
        ),
      ),
    );
    expect(saved.every((result) => result.accepted)).toBe(true);
    await waitFor(() => heard.get('g1')!.length === POOLS && heard.get('g2')!.length === POOLS, {
      message: 'each gateway heard of its users in every pool',
    });
    expect(heard.get('g1')!.sort()).toEqual(
      firsts.map((user, pool) => `${user}=${pool + 1}`).sort(),
    );
    expect(heard.get('g2')!.sort()).toEqual(
      seconds.map((user, pool) => `${user}=${pool + 1}`).sort(),
    );
    for (const stop of stops) await stop();
  });
});
