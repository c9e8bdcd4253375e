/**
 * Fencing tokens (issue 16, item 1): a fenced badge write is accepted only under the pool's
 * current token, never before a token was taken; and on Redis a token is never issued twice,
 * even after Redis lost the fence key (FLUSHALL, a restart without persistence) or rolled it
 * back (an AOF that lost its last second, a replica promoted before it had the last token).
 */
import { poolOf } from '@bubble/protocol';
import { RedisStore, type BubbleStore } from '@bubble/store';
import { startRedisServer, uniquePrefix, waitFor } from '@bubble/test-utils';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { TEST_POOLS, T0, describeEachEngine } from '../support/engines.js';

const POOL = 5;

function userOf(pool: number, tag = 'u'): string {
  for (let i = 0; ; i++) if (poolOf(`${tag}${i}`, TEST_POOLS) === pool) return `${tag}${i}`;
}

const USER = userOf(POOL);

function write(store: BubbleStore, fence: number, feed: number, pool = POOL, user = USER) {
  return store.fencedBadges.saveFenced(pool, fence, [{ user, fields: { feed } }], T0, {
    stamps: true,
  });
}

describeEachEngine('fencing tokens', (ctx) => {
  it('refuses and counts a fenced write to a pool whose token was never taken', async () => {
    const { store } = ctx();
    for (const fence of [0, 1, Date.now() * 1000]) {
      expect(await write(store, fence, 1)).toEqual({ accepted: false, changed: 0 });
    }
    expect(await store.fencedBadges.staleWritesRejected(POOL)).toBe(3);
    expect(await store.badges.load(USER)).toBeNull();
  });

  it('accepts the current token; older ones are refused and counted', async () => {
    const { store } = ctx();
    const { coordination, fencedBadges } = store;
    const first = await coordination.nextFence(POOL);
    const second = await coordination.nextFence(POOL);
    expect(second).toBeGreaterThan(first);
    expect(await write(store, first, 1)).toEqual({ accepted: false, changed: 0 });
    expect(await store.badges.load(USER)).toBeNull();
    expect(await write(store, second, 2)).toMatchObject({ accepted: true, changed: 1 });
    expect(await write(store, first, 3)).toEqual({ accepted: false, changed: 0 });
    expect((await store.badges.load(USER))?.fields).toEqual({ feed: 2 });
    expect(await fencedBadges.staleWritesRejected(POOL)).toBe(2);
  });

  it("a write's own computedAt is stored in place of the batch's, decided or blind", async () => {
    const { store } = ctx();
    const fence = await store.coordination.nextFence(POOL);
    const other = userOf(POOL, 'w');
    const known = { epoch: '', version: -1 };
    const first = await store.fencedBadges.saveFenced(
      POOL,
      fence,
      [
        { user: USER, fields: { feed: 1 }, computedAt: T0 - 500, known },
        { user: other, fields: { feed: 1 } },
      ],
      T0,
    );
    expect(first).toMatchObject({ accepted: true, changed: 2 });
    expect((await store.badges.load(USER))?.computedAt).toBe(T0 - 500);
    expect((await store.badges.load(other))?.computedAt).toBe(T0);
    // Now believed: the next write goes in blind on Redis, and keeps its own time too.
    expect(known.version).toBe(1);
    await store.fencedBadges.saveFenced(
      POOL,
      fence,
      [{ user: USER, fields: { feed: 2 }, computedAt: T0 - 200, known }],
      T0 + 1_000,
    );
    expect(await store.badges.load(USER)).toMatchObject({
      version: 2,
      computedAt: T0 - 200,
      fields: { feed: 2 },
    });
  });

  it('a token newer than the current one is refused and retires the current one', async () => {
    const { store } = ctx();
    const { coordination, fencedBadges } = store;
    const current = await coordination.nextFence(POOL);
    // Only a token whose issue the store lost can be newer than the current one.
    const lost = current + 1_000;
    expect(await write(store, lost, 1)).toEqual({ accepted: false, changed: 0 });
    expect(await write(store, current, 2)).toEqual({ accepted: false, changed: 0 });
    expect(await coordination.currentFence(POOL)).toBe(0);
    const next = await coordination.nextFence(POOL);
    expect(next).toBeGreaterThan(lost);
    expect(await write(store, next, 3)).toMatchObject({ accepted: true, changed: 1 });
    expect(await fencedBadges.staleWritesRejected(POOL)).toBe(2);
  });

  it('gives every acquisition a larger token than all before, concurrent ones too', async () => {
    const { store } = ctx();
    const issued: number[] = [];
    for (let round = 0; round < 5; round++) {
      const tokens = await Promise.all(
        Array.from({ length: 10 }, () => store.coordination.nextFence(POOL)),
      );
      for (const token of tokens) expect(Number.isSafeInteger(token)).toBe(true);
      expect(Math.min(...tokens)).toBeGreaterThan(Math.max(0, ...issued));
      issued.push(...tokens);
    }
    expect(new Set(issued).size).toBe(issued.length);
    expect(await store.coordination.currentFence(POOL)).toBe(Math.max(...issued));
  });
});

/** A RedisStore of its own redis-server, which the test may flush, roll back or restart. */
async function ownRedis() {
  let server = await startRedisServer();
  const { port } = server;
  const prefix = uniquePrefix();
  const admin = new Redis(server.url, { maxRetriesPerRequest: 2 });
  const store = new RedisStore({ url: server.url, keyPrefix: prefix, pools: TEST_POOLS });
  // Refused connections while the server restarts are expected; the clients retry.
  for (const client of [admin, store.redis]) client.on('error', () => {});
  const fenceKey = store.keys.fence(POOL);
  return {
    store,
    admin,
    fenceKey,
    /** Kills the server (SIGKILL) and starts an empty one on the same port. */
    async restartEmpty(): Promise<void> {
      server.kill('SIGKILL');
      await server.stop();
      server = await startRedisServer({ port });
      await waitFor(async () => (await admin.ping().catch(() => null)) === 'PONG', {
        message: 'the admin client reconnects to the restarted redis-server',
      });
    },
    async close(): Promise<void> {
      await store.close();
      admin.disconnect();
      await server.stop();
    },
  };
}

/** Runs `body` on a redis-server and store of its own (ownRedis), closed after it. */
async function withOwnRedis(
  body: (redis: Awaited<ReturnType<typeof ownRedis>>) => Promise<void>,
): Promise<void> {
  const redis = await ownRedis();
  try {
    await body(redis);
  } finally {
    await redis.close();
  }
}

/** Tokens as an owner would take them, with a write accepted under each (it was current). */
async function acquisitions(store: BubbleStore, n: number): Promise<number[]> {
  const tokens: number[] = [];
  for (let i = 0; i < n; i++) {
    const token = await store.coordination.nextFence(POOL);
    expect((await write(store, token, i + 1)).accepted).toBe(true);
    tokens.push(token);
  }
  return tokens;
}

/**
 * After the store lost data: the tokens taken `before` are refused and the next token exceeds
 * them all and writes.
 */
async function expectOnlyNewerTokensWrite(store: BubbleStore, before: number[]): Promise<void> {
  // The old owner (its token, say, 7) is refused before anyone took the pool again ...
  expect(await write(store, before.at(-1)!, 10)).toEqual({ accepted: false, changed: 0 });
  const after = await store.coordination.nextFence(POOL);
  expect(after).toBeGreaterThan(Math.max(...before));
  // ... and after: a reissued 1 (or 7) would have let both owners write.
  for (const old of before) {
    expect(await write(store, old, 11)).toEqual({ accepted: false, changed: 0 });
  }
  expect(await write(store, after, 12)).toMatchObject({ accepted: true, changed: 1 });
}

describe('fencing tokens after Redis lost data [redis]', () => {
  it('after FLUSHALL: old tokens are refused, and the next token exceeds every one before', async () => {
    await withOwnRedis(async (redis) => {
      const { store, admin } = redis;
      const before = await acquisitions(store, 3);
      await admin.flushall();
      await expectOnlyNewerTokensWrite(store, before);
      expect(await store.fencedBadges.staleWritesRejected(POOL)).toBe(before.length + 1);
      expect((await store.badges.load(USER))?.fields).toEqual({ feed: 12 });
    });
  });

  it('after a restart empty on the same port: the same, through the reconnected store', async () => {
    await withOwnRedis(async (redis) => {
      const { store } = redis;
      const before = await acquisitions(store, 3);
      await redis.restartEmpty();
      await waitFor(async () => (await store.redis.ping()) === 'PONG', {
        message: 'the store reconnects to the restarted redis-server',
      });
      await expectOnlyNewerTokensWrite(store, before);
      expect((await store.badges.load(USER))?.fields).toEqual({ feed: 12 });
    });
  });

  it('after a rollback of the fence key: a newer token refused retires the stored one', async () => {
    await withOwnRedis(async (redis) => {
      const { store, admin, fenceKey } = redis;
      const [paused] = await acquisitions(store, 1);
      const [lost] = await acquisitions(store, 1);
      // What an AOF that lost its last second (or a replica promoted behind) holds.
      await admin.set(fenceKey, String(paused));
      expect(await write(store, lost!, 20)).toEqual({ accepted: false, changed: 0 });
      expect(await write(store, paused!, 21)).toEqual({ accepted: false, changed: 0 });
      const next = await store.coordination.nextFence(POOL);
      expect(next).toBeGreaterThan(lost!);
      expect(await write(store, next, 22)).toMatchObject({ accepted: true, changed: 1 });
      expect(await write(store, lost!, 23)).toEqual({ accepted: false, changed: 0 });
      expect(await write(store, paused!, 24)).toEqual({ accepted: false, changed: 0 });
      expect(await store.fencedBadges.staleWritesRejected(POOL)).toBe(4);
    });
  });
});
