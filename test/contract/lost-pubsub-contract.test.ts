/**
 * Issue 16, item 3, at the store: storedStates (what a gateway re-reads) on both engines, and
 * how a gateway's subscription on Redis tells of messages it lost: a number that skips (`gap`),
 * a stored count it did not hear (`check`), its subscriber connection killed (`reconnected`).
 * A loss is made by counting a message in the pool's `sent` hash that is never published, the
 * way a message lost on its way looks to the gateway; the kill is a real CLIENT KILL. The
 * test through real processes and a proxy that loses a message is
 * test/cluster/lost-pubsub.test.ts.
 */
import { poolOf, readChanges } from '@bubble/protocol';
import { RedisKeys, type MissedReason, type RedisStore } from '@bubble/store';
import { uniquePrefix, waitFor } from '@bubble/test-utils';
import { describe, expect, it } from 'vitest';
import { useRedisCluster } from '../support/redis-cluster.js';
import { RedisFencedBadges } from '../../packages/store/src/fenced-badges/redis-fenced-badges.js';
import { TEST_POOLS, T0, describeEachEngine } from '../support/engines.js';

/** `count` user ids of `pool`. */
function usersOf(pool: number, count: number, pools = TEST_POOLS): string[] {
  const users: string[] = [];
  for (let i = 0; users.length < count; i++) {
    if (poolOf(`lp${i}`, pools) === pool) users.push(`lp${i}`);
  }
  return users;
}

interface Report {
  pools: number[];
  reason: MissedReason;
}

describeEachEngine('stored states a gateway re-reads', (ctx) => {
  it('storedStates answers the stored state of each user that has one, over pools', async () => {
    const { store } = ctx();
    const users = [...usersOf(3, 2), ...usersOf(77, 1)];
    for (const [i, user] of users.entries()) await store.badges.save(user, { f: i + 1 }, T0);
    await store.badges.save(users[0]!, { f: 9, n: 1 }, T0 + 1);
    const states = await store.fencedBadges.storedStates([...users, 'never-stored']);
    const expected = await Promise.all(
      users.map(async (user) => ({ user, ...(await store.badges.load(user))! })),
    );
    expect(states.sort((a, b) => a.user.localeCompare(b.user))).toEqual(
      expected.sort((a, b) => a.user.localeCompare(b.user)),
    );
    expect(states.find((s) => s.user === users[0])).toMatchObject({
      version: 2,
      fields: { f: 9, n: 1 },
    });
  });
});

describeEachEngine(
  'a gateway subscription that lost messages',
  (ctx) => {
    async function subscribed(checkEveryMs: number) {
      const store = ctx().store as RedisStore;
      const reports: Report[] = [];
      const heard: string[] = [];
      const close = await store.fencedBadges.subscribeGateway(
        'g1',
        (changes) => heard.push(...readChanges(changes).map((c) => `${c.user}=${c.fields.f}`)),
        {
          onMissed: (pools, reason) => reports.push({ pools: [...pools], reason }),
          checkEveryMs,
        },
      );
      /** Counts a message to g1 in `pool` that is never published. */
      const lose = (pool: number) => store.redis.hincrby(store.keys.sentToGateways(pool), 'g1', 1);
      return { store, reports, heard, close, lose };
    }

    it('a message whose number skips reports its pool (gap)', async () => {
      const { store, reports, heard, close, lose } = await subscribed(0);
      const [user] = usersOf(12, 1);
      await store.fencedBadges.route('g1', [user!], 60_000);
      await store.badges.save(user!, { f: 1 }, T0);
      await waitFor(() => heard.length === 1);
      await lose(12);
      await store.badges.save(user!, { f: 2 }, T0 + 1);
      await waitFor(() => reports.length === 1);
      expect(reports).toEqual([{ pools: [12], reason: 'gap' }]);
      expect(heard).toEqual([`${user}=1`, `${user}=2`]);
      await close();
    });

    it('the check reports a count it did not hear, and nothing while messages arrive', async () => {
      const { store, reports, heard, close, lose } = await subscribed(25);
      const users = [5, 6, 7, 8].flatMap((pool) => usersOf(pool, 5));
      await store.fencedBadges.route('g1', users, 60_000);
      // Changes in flight while checks run: each arrives, none is reported.
      for (let round = 1; round <= 10; round++) {
        await Promise.all(users.map((user) => store.badges.save(user, { f: round }, T0 + round)));
      }
      await waitFor(() => heard.length === 10 * users.length);
      await lose(41);
      await waitFor(() => reports.length > 0, { message: 'the check never found the loss' });
      expect(reports).toEqual([{ pools: [41], reason: 'check' }]);
      await close();
    });

    it('its subscriber killed, every pool is reported once it is subscribed again', async () => {
      const { store, reports, heard, close } = await subscribed(0);
      const admin = ctx().admin!;
      const clients = (await admin.call('CLIENT', 'LIST', 'TYPE', 'pubsub')) as string;
      const ids = clients
        .split('\n')
        .filter((line) => line.includes(' name=bubble-sub:g1 '))
        .map((line) => /^id=(\d+)/.exec(line)![1]!);
      expect(ids).toHaveLength(1);
      await admin.call('CLIENT', 'KILL', 'ID', ids[0]!);
      await waitFor(() => reports.length === 1, { message: 'no report after the kill' });
      expect(reports[0]).toEqual({
        pools: Array.from({ length: TEST_POOLS }, (_, pool) => pool),
        reason: 'reconnected',
      });
      // Subscribed again by then: the next change is heard.
      const [user] = usersOf(30, 1);
      await store.fencedBadges.route('g1', [user!], 60_000);
      await store.badges.save(user!, { f: 4 }, T0);
      await waitFor(() => heard.includes(`${user}=4`));
      await close();
    });

    it("closing the subscription removes the gateway's counts", async () => {
      const { store, heard, close } = await subscribed(0);
      const [user] = usersOf(9, 1);
      await store.fencedBadges.route('g1', [user!], 60_000);
      await store.badges.save(user!, { f: 1 }, T0);
      await waitFor(() => heard.length === 1);
      expect(await store.redis.hget(store.keys.sentToGateways(9), 'g1')).toBe('1');
      await close();
      expect(await store.redis.hexists(store.keys.sentToGateways(9), 'g1')).toBe(0);
    });

    it('the counts of gateways no longer live are forgotten, the live ones kept', async () => {
      const store = ctx().store as RedisStore;
      const [a, b] = [usersOf(4, 1)[0]!, usersOf(60, 1)[0]!];
      await store.fencedBadges.route('g-live', [a, b], 60_000);
      await store.fencedBadges.route('g-dead', [a, b], 60_000);
      await store.badges.save(a, { f: 1 }, T0);
      await store.badges.save(b, { f: 1 }, T0);
      const sent = (pool: number) => store.redis.hgetall(store.keys.sentToGateways(pool));
      expect(await sent(4)).toEqual({ 'g-live': '1', 'g-dead': '1' });
      expect(await store.fencedBadges.forgetGateways(new Set(['g-live']))).toBe(2);
      expect(await sent(4)).toEqual({ 'g-live': '1' });
      expect(await sent(60)).toEqual({ 'g-live': '1' });
      expect(await store.fencedBadges.forgetGateways(new Set(['g-live']))).toBe(0);
    });
  },
  ['redis'],
);

describe('a gateway subscription that lost messages, on a 3-master Redis Cluster', () => {
  const POOLS = 8;
  const cluster = useRedisCluster();

  it('sharded subscribers: a count not heard by the next check is reported, nothing else', async () => {
    const keys = new RedisKeys(uniquePrefix('lost'), POOLS);
    const badges = new RedisFencedBadges({ client: cluster.client, keys, sharded: true });
    const reports: Report[] = [];
    const heard: string[] = [];
    const close = await badges.subscribeGateway(
      'g1',
      (changes) => heard.push(...readChanges(changes).map((c) => `${c.user}=${c.fields.f}`)),
      {
        onMissed: (pools, reason) => reports.push({ pools: [...pools], reason }),
        checkEveryMs: 25,
      },
    );
    const users = Array.from({ length: POOLS }, (_, pool) => usersOf(pool, 2, POOLS)).flat();
    await badges.route('g1', users, 60_000);
    for (let round = 1; round <= 10; round++) {
      await Promise.all(users.map((user) => badges.saveUnfenced(user, { f: round }, T0 + round)));
    }
    await waitFor(() => heard.length === 10 * users.length);
    await cluster.client.hincrby(keys.sentToGateways(5), 'g1', 1);
    await waitFor(() => reports.length > 0, { message: 'the check never found the loss' });
    expect(reports).toEqual([{ pools: [5], reason: 'check' }]);
    await close();
  });
});
