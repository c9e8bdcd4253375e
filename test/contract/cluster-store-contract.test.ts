/**
 * The cluster store contract (packages/store/src/change-log, presence, fenced-badges): change logs, presence and
 * fenced badge writes, run against both engines with the very same assertions; then the Redis
 * implementations once more on a real 3-master Redis Cluster.
 *
 * The classes the store's barrel does not export are imported from their files.
 */
import { poolOf, readChanges, type BadgeChange, type StoredBadge } from '@bubble/protocol';
import type {
  ChangeLog,
  FencedBadges,
  LogRead,
  PoolEvent,
  PostEvent,
  PresenceStore,
  RedisStore,
} from '@bubble/store';
import { LOG_START, RedisKeys } from '@bubble/store';
import {
  startRedisCluster,
  uniquePrefix,
  waitFor,
  type RedisClusterHandle,
} from '@bubble/test-utils';
import { Cluster, type Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryChangeLog } from '../../packages/store/src/change-log/memory-change-log.js';
import { MemoryFencedBadges } from '../../packages/store/src/fenced-badges/memory-fenced-badges.js';
import { MemoryPresence } from '../../packages/store/src/presence/memory-presence.js';
import { RedisChangeLog } from '../../packages/store/src/change-log/redis-change-log.js';
import { RedisFencedBadges } from '../../packages/store/src/fenced-badges/redis-fenced-badges.js';
import { RedisPresence } from '../../packages/store/src/presence/redis-presence.js';
import { TEST_POOLS, T0, describeEachEngine, type EngineContext } from '../support/engines.js';

interface Parts {
  log: ChangeLog;
  presence: PresenceStore;
  badges: FencedBadges & Pick<RedisFencedBadges, 'saveUnfenced'>;
  /** Sets the pool's current fencing token, as Coordination.nextFence would. */
  setFence(pool: number, fence: number): Promise<void>;
  storedBadge(user: string): Promise<StoredBadge | null>;
}

interface LogCaps {
  maxPoolEvents?: number;
  maxPostEvents?: number;
}

function partsOf(ctx: EngineContext, caps: LogCaps = {}): Parts {
  if (ctx.engine === 'memory') {
    const log = new MemoryChangeLog(caps);
    const fences = new Map<number, number>();
    const states = new Map<string, StoredBadge>();
    return {
      log,
      presence: new MemoryPresence({ pools: TEST_POOLS, log }),
      badges: new MemoryFencedBadges({
        pools: TEST_POOLS,
        badges: states,
        currentFence: (pool) => fences.get(pool) ?? 0,
      }),
      setFence: async (pool, fence) => void fences.set(pool, fence),
      storedBadge: async (user) => structuredClone(states.get(user) ?? null),
    };
  }
  const store = ctx.store as RedisStore;
  const { redis: client, keys } = store;
  const log = new RedisChangeLog({ client, keys, ...caps });
  return {
    log,
    presence: new RedisPresence({ client, keys, log }),
    badges: new RedisFencedBadges({ client, keys, sharded: false }),
    setFence: async (pool, fence) => void (await client.set(keys.fence(pool), fence)),
    storedBadge: (user) => store.badges.load(user),
  };
}

/** `count` user ids of `pool`, in a stable order. */
function usersOf(pool: number, count: number, pools = TEST_POOLS, tag = 'u'): string[] {
  const users: string[] = [];
  for (let i = 0; users.length < count; i++) {
    if (poolOf(`${tag}${i}`, pools) === pool) users.push(`${tag}${i}`);
  }
  return users;
}

/** Subscribes as each gateway; what each hears, as "user=<field's count>" strings. */
async function listenAsGateways(badges: FencedBadges, gateways: string[], field: string) {
  const heard = new Map<string, string[]>(gateways.map((gateway) => [gateway, []]));
  const stops = await Promise.all(
    gateways.map((gateway) =>
      badges.subscribeGateway(gateway, (changes) =>
        heard
          .get(gateway)!
          .push(...readChanges(changes).map((c) => `${c.user}=${c.fields[field]}`)),
      ),
    ),
  );
  return { heard, stops };
}

async function allPoolEvents(log: ChangeLog, pool: number): Promise<PoolEvent[]> {
  const read = (await log.readPoolEvents([{ pool, after: LOG_START }], 10_000)).get(pool)!;
  return read.entries.map((entry) => entry.event);
}

function expectIncreasingIds(read: LogRead<unknown>): void {
  const ids = read.entries.map((entry) => entry.id.split('-').map(Number) as [number, number]);
  for (let i = 1; i < ids.length; i++) {
    const [ms, seq] = ids[i]!;
    const [prevMs, prevSeq] = ids[i - 1]!;
    expect(ms > prevMs || (ms === prevMs && seq > prevSeq), `${ids[i - 1]} < ${ids[i]}`).toBe(true);
  }
}

/** Lets time pass for checks that something does NOT happen within it. */
const elapse = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

const online = (user: string): PoolEvent => ({ kind: 'online', user });
const offline = (user: string): PoolEvent => ({ kind: 'offline', user });

describeEachEngine('cluster store contract', (ctx) => {
  // ---------------------------------------------------------------- presence
  // Presence and routes lapse on the store's own clock (Redis TIME), so these tests let real
  // time pass: short TTLs, waits with deadlines for what lapses.

  it('setOnline records one online event; a renewal only extends the presence', async () => {
    const { presence, log } = partsOf(ctx());
    const [u, brief] = usersOf(7, 2);
    expect(await presence.setOnline([{ user: u!, ttlMs: 500 }])).toEqual([
      { user: u, changed: true },
    ]);
    expect(await presence.setOnline([{ user: u!, ttlMs: 60_000 }])).toEqual([
      { user: u, changed: false },
    ]);
    await presence.setOnline([{ user: brief!, ttlMs: 200 }]);
    await waitFor(async () => !(await presence.isOnline(brief!)), { timeoutMs: 10_000 });
    await elapse(500);
    expect(await presence.isOnline(u!)).toBe(true);
    expect(await presence.isOnline('nobody')).toBe(false);
    expect(await allPoolEvents(log, 7)).toEqual([online(u!), online(brief!)]);
  });

  it('a shorter TTL never shortens a presence another holder extended', async () => {
    const { presence } = partsOf(ctx());
    const [u] = usersOf(7, 1);
    await presence.setOnline([{ user: u!, ttlMs: 60_000 }]);
    expect(await presence.setOnline([{ user: u!, ttlMs: 100 }])).toEqual([
      { user: u, changed: false },
    ]);
    await elapse(300);
    expect(await presence.isOnline(u!)).toBe(true);
  });

  it('routes: changes reach the gateways holding the user; unroute tells who nobody holds', async () => {
    const { badges } = partsOf(ctx());
    const [u, v] = usersOf(9, 2);
    const { heard, stops } = await listenAsGateways(badges, ['g1', 'g2'], 'f');
    await badges.route('g1', [u!, v!], 60_000);
    await badges.route('g2', [u!], 60_000);
    await badges.saveUnfenced(u!, { f: 1 }, T0 + 1);
    await badges.saveUnfenced(v!, { f: 2 }, T0 + 1);
    await waitFor(() => heard.get('g1')!.length === 2 && heard.get('g2')!.length === 1);
    expect(heard.get('g1')!.sort()).toEqual([`${u}=1`, `${v}=2`]);
    expect(heard.get('g2')).toEqual([`${u}=1`]);

    // u is still held by g2; v by nobody; a user never routed is held by nobody either.
    expect(await badges.unroute('g1', [u!, v!, 'never-routed'])).toEqual([v, 'never-routed']);
    // A lapsed route holds nobody: g2's, renewed for a moment only.
    await badges.route('g2', [u!], 200);
    expect(await badges.unroute('g1', [u!])).toEqual([]);
    await waitFor(async () => (await badges.unroute('g1', [u!])).length === 1, {
      timeoutMs: 10_000,
    });
    for (const stop of stops) await stop();
  });

  it('list signals reach the gateways holding each user, across pools, and no other', async () => {
    const { badges } = partsOf(ctx());
    const [u, v] = usersOf(2, 2);
    const [w] = usersOf(5, 1);
    const heard = new Map<string, string[]>([
      ['g1', []],
      ['g2', []],
    ]);
    const stops = await Promise.all(
      [...heard.keys()].map((gateway) =>
        badges.subscribeListSignals(gateway, (users) => heard.get(gateway)!.push(...users)),
      ),
    );
    await badges.route('g1', [u!, w!], 60_000);
    await badges.route('g2', [u!], 60_000);
    await badges.signalLists([u!, v!, w!, 'never-routed']);
    await waitFor(() => heard.get('g1')!.length === 2 && heard.get('g2')!.length === 1);
    expect(heard.get('g1')!.sort()).toEqual([u, w].sort());
    expect(heard.get('g2')).toEqual([u]);
    // A lapsed route is not signalled: once it lapsed, the next signal reaches g2 only.
    await badges.route('g1', [u!], 200);
    await waitFor(
      async () => {
        heard.set('g1', []);
        heard.set('g2', []);
        await badges.signalLists([u!]);
        await waitFor(() => heard.get('g2')!.length === 1);
        return heard.get('g1')!.length === 0;
      },
      { timeoutMs: 10_000 },
    );
    for (const stop of stops) await stop();
  });

  it('setOnline answers in input order across pools; a repeat within a call is a renewal', async () => {
    const { presence, log } = partsOf(ctx());
    const [a, b] = usersOf(3, 2);
    const [c] = usersOf(4, 1);
    await presence.setOnline([{ user: b!, ttlMs: 60_000 }]);
    const changes = await presence.setOnline([
      { user: c!, ttlMs: 200 },
      { user: a!, ttlMs: 60_000 },
      { user: b!, ttlMs: 60_000 },
      { user: c!, ttlMs: 60_000 },
    ]);
    expect(changes).toEqual([
      { user: c, changed: true },
      { user: a, changed: true },
      { user: b, changed: false },
      { user: c, changed: false },
    ]);
    expect(await allPoolEvents(log, 3)).toEqual([online(b!), online(a!)]);
    expect(await allPoolEvents(log, 4)).toEqual([online(c!)]);
    // The later entry of the repeat wins: c is online past the first one's TTL.
    await elapse(400);
    expect(await presence.isOnline(c!)).toBe(true);
    expect(await presence.setOnline([])).toEqual([]);
  });

  it('a user whose presence lapsed comes online again with a new event', async () => {
    const { presence, log } = partsOf(ctx());
    const [u] = usersOf(9, 1);
    await presence.setOnline([{ user: u!, ttlMs: 100 }]);
    await waitFor(async () => !(await presence.isOnline(u!)), { timeoutMs: 10_000 });
    expect(await presence.setOnline([{ user: u!, ttlMs: 60_000 }])).toEqual([
      { user: u, changed: true },
    ]);
    expect(await allPoolEvents(log, 9)).toEqual([online(u!), online(u!)]);
  });

  it('expire removes lapsed users up to the limit, earliest first, recording offline events', async () => {
    const { presence, log } = partsOf(ctx());
    const [a, b, c, d] = usersOf(11, 4);
    await presence.setOnline([
      { user: c!, ttlMs: 300 },
      { user: a!, ttlMs: 100 },
      { user: d!, ttlMs: 60_000 },
      { user: b!, ttlMs: 200 },
    ]);
    await waitFor(async () => (await presence.members(11)).length === 1, { timeoutMs: 10_000 });
    expect(await presence.expire(11, 2)).toEqual([a, b]);
    expect(await presence.expire(11, 2)).toEqual([c]);
    expect(await presence.expire(11, 2)).toEqual([]);
    expect(await presence.members(11)).toEqual([d]);
    expect(await presence.expire(12, 2)).toEqual([]);
    expect((await allPoolEvents(log, 11)).slice(4)).toEqual([
      offline(a!),
      offline(b!),
      offline(c!),
    ]);
    // Expired users are gone: coming back is a change.
    expect(await presence.setOnline([{ user: a!, ttlMs: 60_000 }])).toEqual([
      { user: a, changed: true },
    ]);
    await expect(presence.expire(11, 0)).rejects.toThrow(RangeError);
  });

  it('setOffline records an offline event only for a user with a presence entry', async () => {
    const { presence, log } = partsOf(ctx());
    const [u, lapsed] = usersOf(5, 2);
    expect(await presence.setOffline(u!)).toBe(false);
    expect(await allPoolEvents(log, 5)).toEqual([]);
    await presence.setOnline([
      { user: u!, ttlMs: 60_000 },
      { user: lapsed!, ttlMs: 10 },
    ]);
    expect(await presence.setOffline(u!)).toBe(true);
    expect(await presence.isOnline(u!)).toBe(false);
    expect(await presence.setOffline(u!)).toBe(false);
    // Lapsed but not yet expired: its offline event is still owed, so this records it.
    await waitFor(async () => !(await presence.isOnline(lapsed!)), { timeoutMs: 10_000 });
    expect(await presence.setOffline(lapsed!)).toBe(true);
    expect(await presence.expire(5, 10)).toEqual([]);
    expect(await allPoolEvents(log, 5)).toEqual([
      online(u!),
      online(lapsed!),
      offline(u!),
      offline(lapsed!),
    ]);
  });

  it('members and poolSizes count the users online now', async () => {
    const { presence } = partsOf(ctx());
    const short = [...usersOf(0, 3), ...usersOf(42, 2)];
    const long = [...usersOf(0, 5).slice(3), ...usersOf(99, 1)];
    await presence.setOnline([
      ...short.map((user) => ({ user, ttlMs: 1_000 })),
      ...long.map((user) => ({ user, ttlMs: 60_000 })),
    ]);
    const sizes = await presence.poolSizes();
    expect(sizes).toHaveLength(TEST_POOLS);
    const expected = Array<number>(TEST_POOLS).fill(0);
    expected[0] = 5;
    expected[42] = 2;
    expected[99] = 1;
    expect(sizes).toEqual(expected);
    expect([...(await presence.members(0))].sort()).toEqual([...usersOf(0, 5)].sort());
    // Lapsed users no longer count, even before expire() removes them.
    expected[0] = 2;
    expected[42] = 0;
    await waitFor(async () => (await presence.poolSizes())[42] === 0, { timeoutMs: 10_000 });
    expect(await presence.poolSizes()).toEqual(expected);
    expect([...(await presence.members(0))].sort()).toEqual(usersOf(0, 5).slice(3).sort());
    expect(await presence.members(1)).toEqual([]);
  });

  // ---------------------------------------------------------------- change log

  it('pool events read back in order, after a position, up to a limit', async () => {
    const { log } = partsOf(ctx());
    const events: PoolEvent[] = [
      { kind: 'online', user: 'a' },
      { kind: 'follows', user: 'a' },
      { kind: 'cursor', user: 'a', readAt: T0 + 5 },
      { kind: 'offline', user: 'a' },
      { kind: 'cursor', user: 'b', readAt: 0 },
    ];
    expect(await log.poolLogEnd(2)).toBe(LOG_START);
    expect((await log.readPoolEvents([{ pool: 2, after: LOG_START }], 10)).get(2)).toEqual({
      entries: [],
      gap: false,
    });
    await log.appendPoolEvents(2, events.slice(0, 3));
    await log.appendPoolEvents(2, []);
    await log.appendPoolEvents(2, events.slice(3));
    const all = (await log.readPoolEvents([{ pool: 2, after: LOG_START }], 10)).get(2)!;
    expect(all.gap).toBe(false);
    expect(all.entries.map((entry) => entry.event)).toEqual(events);
    expectIncreasingIds(all);
    for (const entry of all.entries) expect(entry.id).toMatch(/^\d+-\d+$/);
    expect(await log.poolLogEnd(2)).toBe(all.entries[4]!.id);

    const page = (await log.readPoolEvents([{ pool: 2, after: all.entries[1]!.id }], 2)).get(2)!;
    expect(page).toEqual({ entries: all.entries.slice(2, 4), gap: false });
    const tail = (await log.readPoolEvents([{ pool: 2, after: all.entries[4]!.id }], 2)).get(2)!;
    expect(tail).toEqual({ entries: [], gap: false });
    // Other pools' logs are separate.
    expect(await allPoolEvents(log, 3)).toEqual([]);
  });

  it('post events read back in order, after a position, up to a limit', async () => {
    const { log } = partsOf(ctx());
    const events: PostEvent[] = [
      { kind: 'post', author: 'a', id: 'p1', ts: T0 },
      { kind: 'post', author: 'b', id: 'p1', ts: T0 + 1 },
      { kind: 'delete', author: 'a', id: 'p1', ts: T0 },
    ];
    expect(await log.postLogEnd()).toBe(LOG_START);
    expect(await log.readPostEvents(LOG_START, 5)).toEqual({ entries: [], gap: false });
    await log.appendPostEvents(events.slice(0, 2));
    await log.appendPostEvents(events.slice(2));
    const all = await log.readPostEvents(LOG_START, 5);
    expect(all.entries.map((entry) => entry.event)).toEqual(events);
    expectIncreasingIds(all);
    expect(await log.postLogEnd()).toBe(all.entries[2]!.id);
    expect(await log.readPostEvents(all.entries[0]!.id, 1)).toEqual({
      entries: [all.entries[1]],
      gap: false,
    });
    // The pool logs do not see post events.
    expect(await allPoolEvents(log, 0)).toEqual([]);
  });

  it('reads many pools at once, each from its own position', async () => {
    const { log } = partsOf(ctx());
    for (const pool of [1, 2, 3]) {
      await log.appendPoolEvents(pool, [
        { kind: 'follows', user: `x${pool}` },
        { kind: 'follows', user: `y${pool}` },
      ]);
    }
    const firstOf2 = (await log.readPoolEvents([{ pool: 2, after: LOG_START }], 1)).get(2)!;
    const reads = await log.readPoolEvents(
      [
        { pool: 1, after: LOG_START },
        { pool: 2, after: firstOf2.entries[0]!.id },
        { pool: 3, after: await log.poolLogEnd(3) },
        { pool: 4, after: LOG_START },
      ],
      10,
    );
    expect([...reads.keys()].sort()).toEqual([1, 2, 3, 4]);
    expect(reads.get(1)!.entries.map((entry) => entry.event)).toEqual([
      { kind: 'follows', user: 'x1' },
      { kind: 'follows', user: 'y1' },
    ]);
    expect(reads.get(2)!.entries.map((entry) => entry.event)).toEqual([
      { kind: 'follows', user: 'y2' },
    ]);
    expect(reads.get(3)).toEqual({ entries: [], gap: false });
    expect(reads.get(4)).toEqual({ entries: [], gap: false });
  });

  it('a reader whose entries were trimmed sees a gap; one that kept up does not', async () => {
    const { log } = partsOf(ctx(), { maxPoolEvents: 10, maxPostEvents: 10 });
    await log.appendPoolEvents(6, [{ kind: 'follows', user: 'first' }]);
    await log.appendPostEvents([{ kind: 'post', author: 'a', id: 'first', ts: T0 }]);
    const firstPool = await log.poolLogEnd(6);
    const firstPost = await log.postLogEnd();
    // Enough batches that even Redis' approximate trimming (whole 100-entry nodes) trims.
    for (let batch = 0; batch < 30; batch++) {
      const users = Array.from({ length: 10 }, (_, i) => `u${batch * 10 + i}`);
      await log.appendPoolEvents(
        6,
        users.map((user) => ({ kind: 'follows', user })),
      );
      await log.appendPostEvents(users.map((id) => ({ kind: 'post', author: 'a', id, ts: T0 })));
    }

    for (const after of [firstPool, LOG_START]) {
      const missed = (await log.readPoolEvents([{ pool: 6, after }], 1_000)).get(6)!;
      expect(missed.gap).toBe(true);
      // What is still kept reads back in order, ending with the newest entry.
      expect(missed.entries.length).toBeGreaterThanOrEqual(10);
      expect(missed.entries.length).toBeLessThan(301);
      expectIncreasingIds(missed);
      expect(missed.entries.at(-1)!.event).toEqual({ kind: 'follows', user: 'u299' });
      // Resuming from what it read is gap-free again.
      const resumed = (
        await log.readPoolEvents([{ pool: 6, after: missed.entries[0]!.id }], 1_000)
      ).get(6)!;
      expect(resumed).toEqual({ entries: missed.entries.slice(1), gap: false });
    }
    const upToDate = await log.poolLogEnd(6);
    expect((await log.readPoolEvents([{ pool: 6, after: upToDate }], 5)).get(6)).toEqual({
      entries: [],
      gap: false,
    });

    const missedPosts = await log.readPostEvents(firstPost, 1_000);
    expect(missedPosts.gap).toBe(true);
    expect(missedPosts.entries.at(-1)!.event).toEqual({
      kind: 'post',
      author: 'a',
      id: 'u299',
      ts: T0,
    });
    const keptPosts = await log.readPostEvents(missedPosts.entries[0]!.id, 1_000);
    expect(keptPosts).toEqual({ entries: missedPosts.entries.slice(1), gap: false });
  });

  it('rejects a malformed position and a non-positive limit', async () => {
    const { log } = partsOf(ctx());
    await expect(log.readPostEvents('nope', 10)).rejects.toThrow(RangeError);
    await expect(log.readPostEvents(LOG_START, 0)).rejects.toThrow(RangeError);
    await expect(log.readPoolEvents([{ pool: 1, after: '12' }], 10)).rejects.toThrow(RangeError);
    await expect(log.readPoolEvents([{ pool: 1, after: LOG_START }], 1.5)).rejects.toThrow(
      RangeError,
    );
  });

  // ---------------------------------------------------------------- fenced badges

  it('stores counts of any size and several fields as given, from write objects the writer reuses', async () => {
    const { badges, setFence, storedBadge } = partsOf(ctx());
    const [a, b] = usersOf(8, 2);
    await setFence(8, 1);
    const big = Number.MAX_SAFE_INTEGER;
    const write = { user: a!, fields: { f: big } as Record<string, number>, known: undefined };
    const first = await badges.saveFenced(8, 1, [write], T0, { stamps: true });
    expect(first.stamps![0]).toMatchObject({ version: 1, changed: true });
    // The engine has read the write: reused for another user and other counts.
    write.user = b!;
    write.fields = { 'c:room-9': 10, f: 0, n: 3, 'r:dot': 1 };
    await badges.saveFenced(8, 1, [write], T0 + 1, { stamps: true });
    const known = { epoch: first.stamps![0]!.epoch, version: 1 };
    await badges.saveFenced(8, 1, [{ user: a!, fields: { f: 1_000_000_007 }, known }], T0 + 2, {
      stamps: true,
    });
    expect(known.version).toBe(2);
    expect(await storedBadge(a!)).toMatchObject({ version: 2, fields: { f: 1_000_000_007 } });
    expect(await storedBadge(b!)).toMatchObject({
      version: 1,
      computedAt: T0 + 1,
      fields: { 'c:room-9': 10, n: 3, 'r:dot': 1 },
    });
    await badges.saveFenced(8, 1, [{ user: a!, fields: { f: big }, known }], T0 + 3, {
      stamps: true,
    });
    expect(await storedBadge(a!)).toMatchObject({ version: 3, fields: { f: big } });
  });

  it('a save with the current fence is accepted; versions move only on a change', async () => {
    const { badges, setFence, storedBadge } = partsOf(ctx());
    const [a, b] = usersOf(8, 2);
    await setFence(8, 3);
    const first = await badges.saveFenced(
      8,
      3,
      [
        { user: a!, fields: { feed: 2, notices: 0 } },
        { user: b!, fields: {} },
      ],
      T0,
      { stamps: true },
    );
    expect(first.accepted).toBe(true);
    expect(first.stamps!.map(({ version, changed }) => ({ version, changed }))).toEqual([
      { version: 1, changed: true },
      { version: 1, changed: true },
    ]);
    const epochOfA = first.stamps![0]!.epoch;
    expect(epochOfA).toMatch(/^\S+$/);
    expect(await storedBadge(a!)).toEqual({
      epoch: epochOfA,
      version: 1,
      computedAt: T0,
      fields: { feed: 2 },
    });
    expect(await storedBadge(b!)).toEqual({
      epoch: first.stamps![1]!.epoch,
      version: 1,
      computedAt: T0,
      fields: {},
    });

    // Same counts (a zero count is no count): no new version, and nothing rewritten (a core's
    // unchanged badge keeps the time its counts were stored at).
    const same = await badges.saveFenced(8, 3, [{ user: a!, fields: { feed: 2 } }], T0 + 1, {
      stamps: true,
    });
    expect(same).toMatchObject({
      accepted: true,
      changed: 0,
      stamps: [{ epoch: epochOfA, version: 1, changed: false }],
    });
    expect((await storedBadge(a!))?.computedAt).toBe(T0);

    // A later acquisition's token, once it is the pool's, is accepted (fencing-tokens.test.ts
    // has the refusals).
    await setFence(8, 4);
    const changed = await badges.saveFenced(
      8,
      4,
      [{ user: a!, fields: { feed: 3, dots: 1 } }],
      T0 + 2,
      { stamps: true },
    );
    expect(changed).toMatchObject({
      accepted: true,
      changed: 1,
      stamps: [{ epoch: epochOfA, version: 2, changed: true }],
    });
    expect(await storedBadge(a!)).toEqual({
      epoch: epochOfA,
      version: 2,
      computedAt: T0 + 2,
      fields: { feed: 3, dots: 1 },
    });
    expect(await badges.staleWritesRejected(8)).toBe(0);
    expect(await badges.saveFenced(8, 4, [], T0, { stamps: true })).toMatchObject({
      accepted: true,
      changed: 0,
      stamps: [],
    });
  });

  it('a save with an older fence is refused and counted, and writes nothing', async () => {
    const { badges, setFence, storedBadge } = partsOf(ctx());
    const [a] = usersOf(8, 1);
    const [b] = usersOf(9, 1);
    // No token taken yet: nothing is accepted.
    expect(
      (await badges.saveFenced(9, 0, [{ user: b!, fields: { feed: 1 } }], T0, { stamps: true }))
        .accepted,
    ).toBe(false);
    await setFence(8, 5);
    expect(
      await badges.saveFenced(8, 4, [{ user: a!, fields: { feed: 1 } }], T0, { stamps: true }),
    ).toEqual({ accepted: false, changed: 0 });
    expect(await storedBadge(a!)).toBeNull();
    expect(await badges.staleWritesRejected(8)).toBe(1);
    await badges.saveFenced(8, 1, [{ user: a!, fields: { feed: 1 } }], T0, { stamps: true });
    expect(await badges.staleWritesRejected(8)).toBe(2);
    expect(await badges.staleWritesRejected(9)).toBe(1);
    const accepted = await badges.saveFenced(8, 5, [{ user: a!, fields: { feed: 1 } }], T0, {
      stamps: true,
    });
    expect(accepted.accepted).toBe(true);
    expect(accepted.stamps![0]).toMatchObject({ version: 1, changed: true });
    // A user of another pool is a caller's mistake, not a write.
    await expect(
      badges.saveFenced(8, 5, [{ user: b!, fields: {} }], T0, { stamps: true }),
    ).rejects.toThrow(RangeError);
  });

  it('a batch larger than the script works in chunks of is stored whole', async () => {
    const { badges, setFence, storedBadge } = partsOf(ctx());
    const users = usersOf(30, 4_500);
    await setFence(30, 1);
    const first = await badges.saveFenced(
      30,
      1,
      users.map((user, i) => ({ user, fields: { f: i + 1 } })),
      T0,
      { stamps: true },
    );
    expect(first.stamps!.filter((s) => s.changed && s.version === 1)).toHaveLength(users.length);
    const second = await badges.saveFenced(
      30,
      1,
      users.map((user, i) => ({ user, fields: { f: i % 2 === 0 ? i + 1 : i + 2 } })),
      T0 + 1,
      { stamps: true },
    );
    expect(second.stamps!.filter((s) => s.changed)).toHaveLength(users.length / 2);
    expect(second.stamps![4_499]).toMatchObject({ version: 2, changed: true });
    expect(await storedBadge(users[4_499]!)).toMatchObject({ version: 2, fields: { f: 4_501 } });
    expect(await storedBadge(users[4_498]!)).toMatchObject({ version: 1, fields: { f: 4_499 } });
  });

  it("a writer's own belief gives the next version; another writer's change between is noticed", async () => {
    const { badges, log, presence, setFence, storedBadge } = partsOf(ctx());
    const [a, b] = usersOf(12, 2);
    await setFence(12, 1);
    await presence.setOnline([{ user: a!, ttlMs: 60_000 }]);
    const seen = await log.poolLogEnd(12);
    const belief = { epoch: '', version: 0 };
    const save = (fields: Record<string, number>, at: number, known = belief, user = a!) =>
      badges.saveFenced(12, 1, [{ user, fields, known }], at, { seenLog: seen, stamps: true });

    const first = await save({ f: 1 }, T0);
    expect(first.stamps![0]).toMatchObject({ version: 1, changed: true });
    const { epoch } = first.stamps![0]!;
    // The belief follows the save.
    expect(belief).toEqual({ epoch, version: 1 });
    expect(await save({ f: 2 }, T0 + 1)).toMatchObject({
      changed: 1,
      stamps: [{ version: 2, changed: true }],
    });
    expect(belief).toEqual({ epoch, version: 2 });
    expect(await storedBadge(a!)).toEqual({
      epoch,
      version: 2,
      computedAt: T0 + 1,
      fields: { f: 2 },
    });

    // A gateway's read between two of ours: our belief is behind, the stored state decides.
    await badges.saveUnfenced(a!, { f: 0 }, T0 + 2);
    expect((await storedBadge(a!))?.version).toBe(3);
    expect(await save({ f: 7 }, T0 + 3)).toMatchObject({
      changed: 1,
      stamps: [{ version: 4, changed: true }],
    });
    expect(belief).toEqual({ epoch, version: 4 });
    expect(await storedBadge(a!)).toEqual({
      epoch,
      version: 4,
      computedAt: T0 + 3,
      fields: { f: 7 },
    });
    // Once decided, the belief is trusted again.
    expect(await save({ f: 8 }, T0 + 4)).toMatchObject({ stamps: [{ version: 5 }] });

    // A gateway stored the very counts we are about to: nothing changes, not even computedAt.
    await badges.saveUnfenced(a!, { f: 9 }, T0 + 5);
    expect(await save({ f: 9 }, T0 + 6)).toMatchObject({
      changed: 0,
      stamps: [{ version: 6, changed: false }],
    });
    expect(belief).toEqual({ epoch, version: 6 });
    expect(await storedBadge(a!)).toMatchObject({ version: 6, computedAt: T0 + 5 });

    // A user who went offline after the log position we read (so we still hold them), then had
    // their badge written by a gateway: the write is noticed although they are not present.
    await presence.setOnline([{ user: b!, ttlMs: 60_000 }]);
    const seenB = await log.poolLogEnd(12);
    const beliefB = { epoch: '', version: 0 };
    await badges.saveFenced(12, 1, [{ user: b!, fields: { f: 1 }, known: beliefB }], T0 + 7, {
      seenLog: seenB,
      stamps: true,
    });
    expect(beliefB.version).toBe(1);
    await presence.setOffline(b!);
    await badges.saveUnfenced(b!, { f: 3 }, T0 + 8);
    const late = await badges.saveFenced(
      12,
      1,
      [{ user: b!, fields: { f: 4 }, known: beliefB }],
      T0 + 9,
      { seenLog: seenB, stamps: true },
    );
    expect(late).toMatchObject({ changed: 1, stamps: [{ version: 3, changed: true }] });
    expect(await storedBadge(b!)).toMatchObject({ version: 3, fields: { f: 4 } });
  });

  it('without a log position every belief is checked against the stored state', async () => {
    const { badges, setFence, storedBadge } = partsOf(ctx());
    const [a] = usersOf(13, 1);
    await setFence(13, 1);
    const belief = { epoch: '', version: 0 };
    await badges.saveFenced(13, 1, [{ user: a!, fields: { f: 1 }, known: belief }], T0, {
      stamps: true,
    });
    await badges.saveFenced(13, 1, [{ user: a!, fields: { f: 2 }, known: belief }], T0 + 1, {
      stamps: true,
    });
    const { epoch } = belief;
    expect(belief.version).toBe(2);

    // A stale belief (1 while 2 is stored), both when the counts differ and when they are equal.
    const stale = { epoch, version: 1 };
    const third = await badges.saveFenced(
      13,
      1,
      [{ user: a!, fields: { f: 3 }, known: stale }],
      T0 + 2,
      { stamps: true },
    );
    expect(third).toMatchObject({ changed: 1, stamps: [{ version: 3, changed: true }] });
    expect(stale).toEqual({ epoch, version: 3 });
    const again = { epoch, version: 2 };
    const same = await badges.saveFenced(
      13,
      1,
      [{ user: a!, fields: { f: 3 }, known: again }],
      T0 + 3,
      { stamps: true },
    );
    expect(same).toMatchObject({ changed: 0, stamps: [{ version: 3, changed: false }] });
    expect(again).toEqual({ epoch, version: 3 });

    // Another epoch, "nothing stored" while something is, and "unknown" (-1): the next version
    // of what is stored, in its epoch.
    const other = { epoch: 'elsewhere', version: 3 };
    const fourth = await badges.saveFenced(
      13,
      1,
      [{ user: a!, fields: { f: 4 }, known: other }],
      T0 + 4,
      { stamps: true },
    );
    expect(fourth).toMatchObject({ changed: 1, stamps: [{ epoch, version: 4 }] });
    const none = { epoch: '', version: 0 };
    await badges.saveFenced(13, 1, [{ user: a!, fields: { f: 5 }, known: none }], T0 + 5, {
      stamps: true,
    });
    expect(none).toEqual({ epoch, version: 5 });
    const unknown = { epoch: '', version: -1 };
    await badges.saveFenced(13, 1, [{ user: a!, fields: { f: 5 }, known: unknown }], T0 + 6, {
      stamps: true,
    });
    expect(unknown).toEqual({ epoch, version: 5 });
    expect(await storedBadge(a!)).toMatchObject({ version: 5, computedAt: T0 + 5 });
  });

  it('a large batch with a few users written by others stores every state at its right version', async () => {
    const { badges, log, presence, setFence, storedBadge } = partsOf(ctx());
    const users = usersOf(31, 4_500);
    await setFence(31, 1);
    await presence.setOnline(users.map((user) => ({ user, ttlMs: 60_000 })));
    const seen = await log.poolLogEnd(31);
    const beliefs = users.map(() => ({ epoch: '', version: 0 }));
    await badges.saveFenced(
      31,
      1,
      users.map((user, i) => ({ user, fields: { f: i + 1 }, known: beliefs[i]! })),
      T0,
      { seenLog: seen, stamps: true },
    );
    expect(beliefs.every((belief) => belief.version === 1)).toBe(true);
    // Someone else changes three users (one in each chunk of the Redis script) behind our back.
    for (const i of [5, 3_100, 4_400]) await badges.saveUnfenced(users[i]!, { f: 0 }, T0 + 1);
    const second = await badges.saveFenced(
      31,
      1,
      users.map((user, i) => ({ user, fields: { f: i + 2 }, known: beliefs[i]! })),
      T0 + 2,
      { seenLog: seen, stamps: true },
    );
    expect(second.changed).toBe(users.length);
    for (const i of [0, 5, 3_099, 3_100, 4_400, 4_499]) {
      const expected = [5, 3_100, 4_400].includes(i) ? 3 : 2;
      expect(second.stamps![i]).toMatchObject({ version: expected, changed: true });
      expect(beliefs[i]!.version).toBe(expected);
      expect(await storedBadge(users[i]!)).toMatchObject({
        version: expected,
        fields: { f: i + 2 },
      });
    }

    // More users written by others than the batch holds: each of the batch's is still noticed.
    for (const user of users.slice(100, 140)) await badges.saveUnfenced(user, { f: 0 }, T0 + 3);
    const small = [0, 1, 120, 121, 200];
    const third = await badges.saveFenced(
      31,
      1,
      small.map((i) => ({ user: users[i]!, fields: { f: i + 3 }, known: beliefs[i]! })),
      T0 + 4,
      { seenLog: seen },
    );
    // Not asked for stamps (a core's sweep): the beliefs alone say what is stored now.
    expect(third).toEqual({ accepted: true, changed: small.length });
    expect(small.map((i) => beliefs[i]!.version)).toEqual([3, 3, 4, 4, 3]);
    for (const i of small) {
      const { epoch, version } = beliefs[i]!;
      expect(await storedBadge(users[i]!)).toMatchObject({ epoch, version, fields: { f: i + 3 } });
    }
  });

  it('unfenced changes are published to the subscribers of their pool, fenced ones are not', async () => {
    const { badges, setFence } = partsOf(ctx());
    const [a, b] = usersOf(20, 2);
    const [c] = usersOf(21, 1);
    await setFence(20, 1);
    await setFence(21, 1);
    const both: Array<[number, BadgeChange[]]> = [];
    const only21: Array<[number, BadgeChange[]]> = [];
    const stopBoth = await badges.subscribe([20, 21], (pool, changes) =>
      both.push([pool, changes]),
    );
    const stop21 = await badges.subscribe([21], (pool, changes) => only21.push([pool, changes]));

    // A gateway's writes (cold starts, reads): the pool's owner must hear of them.
    const sa = await badges.saveUnfenced(a!, { feed: 1 }, T0);
    // Nothing changes: nothing is published (a message would arrive before the next one).
    await badges.saveUnfenced(a!, { feed: 1 }, T0 + 1);
    // The owner's own writes it knows: not published on the pool's channel.
    await badges.saveFenced(20, 1, [{ user: b!, fields: { feed: 2 } }], T0 + 1, { stamps: true });
    const sb = await badges.saveUnfenced(b!, { feed: 3, notices: 1 }, T0 + 2);
    const sc = await badges.saveUnfenced(c!, {}, T0 + 3);
    await waitFor(() => both.length >= 3 && only21.length >= 1);

    expect(both).toEqual([
      [20, [{ user: a, epoch: sa.epoch, version: 1, fields: { feed: 1 }, computedAt: T0 }]],
      [
        20,
        [
          {
            user: b,
            epoch: sb.epoch,
            version: 2,
            fields: { feed: 3, notices: 1 },
            computedAt: T0 + 2,
          },
        ],
      ],
      [21, [{ user: c, epoch: sc.epoch, version: 1, fields: {}, computedAt: T0 + 3 }]],
    ]);
    // Pool 20's messages went out first; had they reached this subscriber, they would be here.
    expect(only21).toEqual([both[2]]);

    await stopBoth();
    await stopBoth();
    await badges.saveUnfenced(c!, { feed: 9 }, T0 + 4);
    await waitFor(() => only21.length >= 2);
    expect(both).toHaveLength(3);
    // Fenced saves, refused or accepted, publish nothing here.
    await setFence(21, 2);
    await badges.saveFenced(21, 1, [{ user: c!, fields: { feed: 10 } }], T0 + 5, { stamps: true });
    await badges.saveFenced(21, 2, [{ user: c!, fields: { feed: 11 } }], T0 + 6, { stamps: true });
    await badges.saveUnfenced(c!, { feed: 12 }, T0 + 7);
    await waitFor(() => only21.length >= 3);
    expect(only21.map(([, changes]) => changes[0]!.fields)).toEqual([
      {},
      { feed: 9 },
      { feed: 12 },
    ]);
    expect(only21[2]![1][0]!.version).toBe(4);
    await stop21();
  });
});

// -------------------------------------------------------------------- Redis Cluster

describeEachEngine(
  "Redis: the pool's touched set",
  (ctx) => {
    it('holds present users a gateway wrote until the owner decides them; a new owner starts it over', async () => {
      const store = ctx().store as RedisStore;
      const { badges, log, presence, setFence } = partsOf(ctx());
      const touched = (pool: number) => store.redis.smembers(store.keys.touched(pool));
      const [a, b, c, d] = usersOf(40, 4);
      await setFence(40, 1);
      await presence.setOnline([a!, b!, c!].map((user) => ({ user, ttlMs: 60_000 })));
      const seen = await log.poolLogEnd(40);
      const beliefs = new Map([a!, b!, c!].map((user) => [user, { epoch: '', version: 0 }]));
      const writeAll = (at: number, users = [a!, b!, c!]) =>
        badges.saveFenced(
          40,
          1,
          users.map((user) => ({ user, fields: { f: at - T0 + 1 }, known: beliefs.get(user)! })),
          at,
          { seenLog: seen, stamps: true },
        );
      await writeAll(T0);

      // Gateway writes of present users are recorded; of a user who is not present, not.
      await badges.saveUnfenced(a!, { f: 0 }, T0 + 1);
      await badges.saveUnfenced(b!, { f: 0 }, T0 + 1);
      await badges.saveUnfenced(d!, { f: 0 }, T0 + 1);
      // A write that changes nothing is not recorded either.
      await badges.saveUnfenced(b!, { f: 0 }, T0 + 2);
      expect((await touched(40)).sort()).toEqual([a!, b!].sort());

      // The owner's write decides a and drops it; b went offline meanwhile and is dropped too.
      await presence.setOffline(b!);
      await writeAll(T0 + 3, [a!, c!]);
      expect(await touched(40)).toEqual([]);

      await badges.saveUnfenced(c!, { f: 0 }, T0 + 4);
      expect(await touched(40)).toEqual([c!]);
      await store.coordination.nextFence(40);
      expect(await touched(40)).toEqual([]);
    });

    it('saves after the server lost its scripts (a restart, SCRIPT FLUSH)', async () => {
      const store = ctx().store as RedisStore;
      const { badges, setFence, storedBadge } = partsOf(ctx());
      const [a] = usersOf(41, 1);
      await setFence(41, 1);
      await store.redis.script('FLUSH');
      const saved = await badges.saveFenced(41, 1, [{ user: a!, fields: { f: 4 } }], T0, {
        stamps: true,
      });
      expect(saved).toMatchObject({ accepted: true, changed: 1 });
      await store.redis.script('FLUSH');
      expect((await badges.saveUnfenced(a!, { f: 5 }, T0 + 1)).version).toBe(2);
      expect(await storedBadge(a!)).toMatchObject({ version: 2, fields: { f: 5 } });
    });

    it("a core's changes reach the written channel while it has a subscriber (a channel or a pattern)", async () => {
      const store = ctx().store as RedisStore;
      const { badges, setFence, storedBadge } = partsOf(ctx());
      const [a] = usersOf(42, 1);
      await setFence(42, 1);
      // Nobody listens: stored all the same (no message is built).
      await badges.saveFenced(42, 1, [{ user: a!, fields: { f: 1 } }], T0);
      expect(await storedBadge(a!)).toMatchObject({ version: 1, fields: { f: 1 } });

      const heard: string[] = [];
      const listener = (store.redis as Redis).duplicate();
      listener.on('message', (_channel: string, message: string) => heard.push(message));
      listener.on('pmessage', (_pattern: string, _channel: string, message: string) =>
        heard.push(message),
      );
      const channel = store.keys.writtenChannel(42);
      await listener.subscribe(channel);
      await badges.saveFenced(42, 1, [{ user: a!, fields: { f: 2 } }], T0 + 1);
      await waitFor(() => heard.length === 1, { message: 'the subscriber heard the save' });
      expect(heard[0]!.split('\n')).toEqual([
        '1',
        a!,
        expect.stringMatching(/^[^|]+\|2\|\d+\|f=2$/),
      ]);

      await listener.unsubscribe(channel);
      await listener.psubscribe(channel.replace('{p:42}', '{p:*}'));
      await badges.saveFenced(42, 1, [{ user: a!, fields: { f: 3 } }], T0 + 2);
      await waitFor(() => heard.length === 2, { message: 'the pattern subscriber heard the save' });
      expect(heard[1]!.split('\n')[2]).toMatch(/\|3\|\d+\|f=3$/);
      listener.disconnect();
    });

    it('batches in flight together, more than one encoding slab holds, are stored intact', async () => {
      const { badges, setFence, storedBadge } = partsOf(ctx());
      // 30 pools × 1,000 users × ~60 bytes: past the first 1 MB slab while all are in flight.
      const pools = Array.from({ length: 30 }, (_, k) => 50 + k);
      const usersByPool = pools.map((pool) => usersOf(pool, 1_000));
      await Promise.all(pools.map((pool) => setFence(pool, 1)));
      const results = await Promise.all(
        pools.map((pool, k) =>
          badges.saveFenced(
            pool,
            1,
            usersByPool[k]!.map((user, i) => ({
              user,
              fields: { f: 1_000_000 + k * 1_000 + i, n: 7 },
              known: { epoch: '', version: 0 },
            })),
            T0,
            { seenLog: LOG_START, stamps: true },
          ),
        ),
      );
      for (const [k, result] of results.entries()) {
        expect(result.changed).toBe(1_000);
        for (const i of [0, 499, 999]) {
          expect(await storedBadge(usersByPool[k]![i]!)).toMatchObject({
            version: 1,
            fields: { f: 1_000_000 + k * 1_000 + i, n: 7 },
          });
        }
      }
    });
  },
  ['redis'],
);

describe('cluster store on a 3-master Redis Cluster', () => {
  const POOLS = 8;
  let cluster: RedisClusterHandle | undefined;
  let client: Cluster | undefined;

  beforeAll(async () => {
    cluster = await startRedisCluster({ masters: 3 });
    client = new Cluster(cluster.nodes, { enableAutoPipelining: true });
  });

  afterAll(async () => {
    await client?.quit().catch(() => client?.disconnect());
    await cluster?.stop();
  });

  it('presence, change logs and sharded fenced badges work across shards', async () => {
    const keys = new RedisKeys(uniquePrefix('cluster'), POOLS);
    const log = new RedisChangeLog({ client: client!, keys });
    const presence = new RedisPresence({ client: client!, keys, log });
    const badges = new RedisFencedBadges({ client: client!, keys, sharded: true });
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
    await Promise.all(pools.map((pool) => client!.set(keys.fence(pool), 2)));
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
    const broadcast = new RedisFencedBadges({ client: client!, keys, sharded: false });
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
      client!.nodes('master').map(async (node) => (await node.dbsize()) > 0),
    );
    expect(mastersWithKeys.filter(Boolean).length).toBeGreaterThanOrEqual(2);
  });

  it('list signals reach the gateway holding each user, over sharded pub/sub on every shard', async () => {
    const keys = new RedisKeys(uniquePrefix('cluster-lists'), POOLS);
    const badges = new RedisFencedBadges({ client: client!, keys, sharded: true });
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
    const badges = new RedisFencedBadges({ client: client!, keys, sharded: true });
    const pools = Array.from({ length: POOLS }, (_, pool) => pool);
    const usersByPool = pools.map((pool) => usersOf(pool, 2, POOLS));
    const { heard, stops } = await listenAsGateways(badges, ['g1', 'g2'], 'feed');
    // g1 holds the first user of every pool, g2 the second; nobody is told of anyone else.
    const firsts = usersByPool.map((users) => users[0]!);
    const seconds = usersByPool.map((users) => users[1]!);
    await badges.route('g1', firsts, 10_000);
    await badges.route('g2', seconds, 10_000);
    await Promise.all(pools.map((pool) => client!.set(keys.fence(pool), 1)));
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
