/**
 * The cluster store contract (packages/store/src/change-log, presence, fenced-badges): change logs, run against both engines with the very same assertions, and the Redis pool's touched set. The other parts:
 * test/contract/cluster-store-*.test.ts.
 */
import type { PoolEvent, PostEvent, RedisStore } from '@bubble/store';
import { LOG_START } from '@bubble/store';
import { waitFor } from '@bubble/test-utils';
import type { Redis } from 'ioredis';
import { expect, it } from 'vitest';
import { T0, describeEachEngine } from '../support/engines.js';
import {
  allPoolEvents,
  expectIncreasingIds,
  partsOf,
  usersOf,
} from '../support/cluster-store-contract.js';

describeEachEngine('cluster store contract: change log', (ctx) => {
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
});

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
