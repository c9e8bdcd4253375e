/**
 * BadgeStates.saveMany, offline delivery's grouped save (one call per pool and computedAt):
 * the same stamps and stored states as save() of each write in order, repeated users included,
 * on the memory engine, a standalone Redis and a Redis Cluster (each call's keys in one slot);
 * on Redis every user not online starts to age in its pool's offline index.
 */
import { MemoryStore, RedisStore, type BadgeStateWrite, type BubbleStore } from '@bubble/store';
import {
  startRedisCluster,
  startRedisServer,
  uniquePrefix,
  type RedisClusterHandle,
} from '@bubble/test-utils';
import { poolOf } from '@bubble/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const POOLS = 16;
const T = 1_700_000_000_000;

function writes(): BadgeStateWrite[] {
  const users = Array.from({ length: 40 }, (_, i) => `g${i}`);
  const list: BadgeStateWrite[] = users.map((user, i) => ({
    user,
    fields: (i % 3 === 0 ? {} : { c: i }) as Record<string, number>,
    computedAt: T + (i % 2),
  }));
  // Again with the same counts (version kept), then with new ones (version + 1).
  list.push({ user: 'g1', fields: { c: 1 }, computedAt: T + 5 });
  list.push({ user: 'g2', fields: { c: 99 }, computedAt: T + 5 });
  list.push({ user: 'g2', fields: { c: 100 }, computedAt: T + 5 });
  return list;
}

async function compare(grouped: BubbleStore, single: BubbleStore): Promise<void> {
  const all = writes();
  // Something stored before, so that decided writes meet a stored state.
  await grouped.badges.save('g4', { c: 1 }, T - 1);
  await single.badges.save('g4', { c: 1 }, T - 1);
  const stamps = await grouped.badges.saveMany(all);
  const expected = [];
  for (const { user, fields, computedAt } of all) {
    expected.push(await single.badges.save(user, fields, computedAt));
  }
  expect(stamps.map(({ version, changed }) => ({ version, changed }))).toEqual(
    expected.map(({ version, changed }) => ({ version, changed })),
  );
  for (const { user } of all) {
    const [a, b] = [await grouped.badges.load(user), await single.badges.load(user)];
    expect({ ...a, epoch: '' }).toEqual({ ...b, epoch: '' });
    expect(stamps[all.findIndex((w) => w.user === user)]!.epoch).toBe(a!.epoch);
  }
  expect(await grouped.badges.saveMany([])).toEqual([]);
}

async function expectAging(store: RedisStore): Promise<void> {
  for (const { user } of writes()) {
    const since = await store.redis.zscore(store.keys.offlineSince(poolOf(user, POOLS)), user);
    expect(Number(since)).toBeGreaterThanOrEqual(T - 1);
  }
}

it('memory engine: saveMany answers as save() of each write in order', async () => {
  await compare(new MemoryStore({ pools: POOLS }), new MemoryStore({ pools: POOLS }));
});

describe('Redis', () => {
  let server: Awaited<ReturnType<typeof startRedisServer>>;
  let cluster: RedisClusterHandle;
  const stores: RedisStore[] = [];
  beforeAll(async () => {
    [server, cluster] = await Promise.all([startRedisServer(), startRedisCluster({ masters: 3 })]);
  }, 60_000);
  afterAll(async () => {
    await Promise.all(stores.map((store) => store.close()));
    await Promise.all([server?.stop(), cluster?.stop()]);
  });

  it('standalone: saveMany answers as save() of each write in order, and ages them', async () => {
    const made = [0, 1].map(
      () => new RedisStore({ url: server.url, keyPrefix: uniquePrefix('gs'), pools: POOLS }),
    );
    stores.push(...made);
    await compare(made[0]!, made[1]!);
    await expectAging(made[0]!);
  });

  it('Redis Cluster: the same, each call on its pool slot', { timeout: 30_000 }, async () => {
    const clusterNodes = cluster.nodes.map((node) => `${node.host}:${node.port}`);
    const made = [0, 1].map(
      () => new RedisStore({ clusterNodes, keyPrefix: uniquePrefix('gc'), pools: POOLS }),
    );
    stores.push(...made);
    await compare(made[0]!, made[1]!);
    await expectAging(made[0]!);
  });
});
