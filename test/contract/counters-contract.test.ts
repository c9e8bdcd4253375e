/**
 * The interaction counters' contract (docs/semantics.md "Interaction counters",
 * packages/store/src/counters/counters.ts InteractionCounters), through the badges layer, with the
 * very same assertions on the memory engine, a standalone Redis and a 3-master Redis Cluster:
 * ingest, duplicates, retraction (also before ingest), reads with and without upTo, scope all,
 * expiry after the window, bad kinds and ids refused with nothing written, the inactive-user
 * drop, and what the cores are told (a `counters` event in the user's pool log).
 */
import { BadgeService } from '@bubble/badges';
import { BubbleError, DAY_MS, ManualClock, poolOf, type Badge } from '@bubble/protocol';
import { LOG_START, MemoryStore, RedisStore, type BubbleStore } from '@bubble/store';
import {
  startRedisServer,
  uniquePrefix,
  waitFor,
  type RedisServerHandle,
} from '@bubble/test-utils';
import { Cluster, Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { T0, TEST_POOLS, scanKeys } from '../support/engines.js';
import { useRedisCluster } from '../support/redis-cluster.js';

interface Rig {
  store: BubbleStore;
  service: BadgeService;
  /** Moves the service's clock (and the memory engine's); Redis stamps on its own TIME. */
  advance(ms: number): void;
  /** Keys of this store matching `pattern` after the prefix (Redis), or null (memory). */
  keys(pattern: string): Promise<string[] | null>;
}

type Engine = 'memory' | 'redis' | 'cluster';

async function refused(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof BubbleError) return err.code;
    throw err;
  }
  throw new Error('expected a refusal');
}

const counters = (badge: Badge) => badge.counters ?? {};

function counterSuite(engine: Engine, rig: () => Rig): void {
  it('ingests events: the badge lists the non-zero kinds and adds them to total', async () => {
    const { service } = rig();
    const result = await service.ingestCounterEvents([
      { user: 'u1', kind: 'mention', id: 'm1' },
      { user: 'u1', kind: 'mention', id: 'm2' },
      { user: 'u1', kind: 'like', id: 'l1' },
      { user: 'u2', kind: 'comment', id: 'c1' },
    ]);
    expect(result).toEqual({ accepted: 4, ignored: 0 });
    const badge = await service.badge('u1');
    expect(badge.counters).toEqual({ like: 1, mention: 2 });
    expect(badge.total).toBe(3);
    expect(badge.display).toBe('3');
    expect(counters(await service.badge('u2'))).toEqual({ comment: 1 });
    // No counter at all: the field is absent.
    expect(await service.badge('u3')).not.toHaveProperty('counters');
  });

  it('is idempotent on (user, kind, id): a repeated id is ignored, also within a batch', async () => {
    const { service } = rig();
    await service.ingestCounterEvents([{ user: 'u1', kind: 'like', id: 'e1' }]);
    expect(
      await service.ingestCounterEvents([
        { user: 'u1', kind: 'like', id: 'e1' },
        { user: 'u1', kind: 'like', id: 'e2' },
        { user: 'u1', kind: 'like', id: 'e2' },
        // The same id in another kind, or for another user, is another event.
        { user: 'u1', kind: 'mention', id: 'e1' },
        { user: 'u9', kind: 'like', id: 'e1' },
      ]),
    ).toEqual({ accepted: 3, ignored: 2 });
    expect(counters(await service.badge('u1'))).toEqual({ like: 2, mention: 1 });
  });

  it('a retracted event no longer counts, and a retried ingest of it stays retracted', async () => {
    const { service } = rig();
    await service.ingestCounterEvents([
      { user: 'u1', kind: 'like', id: 'l1' },
      { user: 'u1', kind: 'like', id: 'l2' },
    ]);
    await service.retractCounterEvent('u1', 'like', 'l1');
    expect(counters(await service.badge('u1'))).toEqual({ like: 1 });
    expect(await service.ingestCounterEvents([{ user: 'u1', kind: 'like', id: 'l1' }])).toEqual({
      accepted: 0,
      ignored: 1,
    });
    // Retracted before its ingest arrived (an unlike overtaking its like): never counts.
    await service.retractCounterEvent('u1', 'comment', 'c1');
    expect(await service.ingestCounterEvents([{ user: 'u1', kind: 'comment', id: 'c1' }])).toEqual({
      accepted: 0,
      ignored: 1,
    });
    // An unknown event, retracted twice: no error.
    await service.retractCounterEvent('u1', 'mention', 'nothing');
    await service.retractCounterEvent('u1', 'mention', 'nothing');
    expect(counters(await service.badge('u1'))).toEqual({ like: 1 });
  });

  it('tells apart retractions whose kind and id overlap ("like" + "post:1", "like:post" + "1")', async () => {
    const { store } = rig();
    const windowMs = 7 * DAY_MS;
    await store.counters.retract({ user: 'u1', kind: 'like:post', id: '1' }, windowMs);
    expect(
      await store.counters.ingest([{ user: 'u1', kind: 'like', id: 'post:1' }], windowMs),
    ).toEqual({ accepted: 1, ignored: 0 });
    await store.counters.retract({ user: 'u1', kind: 'like', id: 'post:9' }, windowMs);
    expect(
      await store.counters.ingest(
        [
          { user: 'u1', kind: 'like:post', id: '9' },
          { user: 'u1', kind: 'like', id: 'post:9' },
        ],
        windowMs,
      ),
    ).toEqual({ accepted: 1, ignored: 1 });
  });

  it('a read with upTo clears what the client was shown; one without clears the kind', async () => {
    const { service, advance } = rig();
    await service.ingestCounterEvents([
      { user: 'u1', kind: 'mention', id: 'm1' },
      { user: 'u1', kind: 'like', id: 'l1' },
    ]);
    const shown = await service.badge('u1', { seen: true });
    expect(shown.counters).toEqual({ like: 1, mention: 1 });
    // Arrives after the badge was computed (the same ms on the memory engine's clock).
    await service.ingestCounterEvents([{ user: 'u1', kind: 'mention', id: 'm2' }]);
    const afterRead = await service.read('u1', {
      scope: 'counter',
      kind: 'mention',
      upTo: shown.computedAt,
    });
    expect(afterRead.counters).toEqual({ like: 1, mention: 1 });
    advance(1);
    const cleared = await service.read('u1', { scope: 'counter', kind: 'mention' });
    expect(cleared.counters).toEqual({ like: 1 });
    // Reads never move back: an older upTo changes nothing.
    await service.ingestCounterEvents([{ user: 'u1', kind: 'mention', id: 'm3' }]);
    const older = await service.read('u1', { scope: 'counter', kind: 'mention', upTo: T0 - 1 });
    expect(older.counters).toEqual({ like: 1, mention: 1 });
    expect(older.total).toBe(2);
  });

  it('a read of scope all reads every kind', async () => {
    const { service } = rig();
    await service.ingestCounterEvents([
      { user: 'u1', kind: 'mention', id: 'm1' },
      { user: 'u1', kind: 'comment', id: 'c1' },
      { user: 'u1', kind: 'like', id: 'l1' },
    ]);
    const badge = await service.read('u1', { scope: 'all' });
    expect(badge).not.toHaveProperty('counters');
    expect(badge.total).toBe(0);
    await service.ingestCounterEvents([{ user: 'u1', kind: 'like', id: 'l2' }]);
    expect(counters(await service.badge('u1'))).toEqual({ like: 1 });
  });

  it('another kind is 400 UB_ERR_BAD_REQUEST, a bad id UB_ERR_BAD_ID; nothing is written', async () => {
    const { service, keys } = rig();
    const batches: [Parameters<typeof service.ingestCounterEvents>[0], string][] = [
      [
        [
          { user: 'u1', kind: 'mention', id: 'm1' },
          { user: 'u1', kind: 'follow', id: 'f1' },
        ],
        'UB_ERR_BAD_REQUEST',
      ],
      [
        [
          { user: 'u1', kind: 'mention', id: 'm1' },
          { user: 'u1', kind: 'mention', id: 'bad id' },
        ],
        'UB_ERR_BAD_ID',
      ],
      [[{ user: 'u/1', kind: 'like', id: 'l1' }], 'UB_ERR_BAD_ID'],
    ];
    for (const [events, code] of batches) {
      expect(await refused(service.ingestCounterEvents(events)), JSON.stringify(events)).toBe(code);
    }
    expect(await refused(service.retractCounterEvent('u1', 'share', 'x'))).toBe(
      'UB_ERR_BAD_REQUEST',
    );
    expect(await refused(service.read('u1', { scope: 'counter', kind: 'share' }))).toBe(
      'UB_ERR_BAD_REQUEST',
    );
    expect(await keys('counters:*')).toEqual(engine === 'memory' ? null : []);
    expect(await service.badge('u1')).not.toHaveProperty('counters');
  });

  it('a badge of a user the platform never mentioned writes no counter state', async () => {
    const { service, keys } = rig();
    await service.badge('nobody', { seen: true });
    await service.read('nobody', { scope: 'counter', kind: 'like' });
    await service.read('nobody', { scope: 'all' });
    expect(await keys('counters:*')).toEqual(engine === 'memory' ? null : []);
  });

  it('the inactive-user job forgets a dropped user’s events, cursors and retracted ids', async () => {
    const { service, store, keys, advance } = rig();
    await service.badge('gone', { seen: true });
    await service.badge('kept', { seen: true });
    await service.ingestCounterEvents([
      { user: 'gone', kind: 'like', id: 'l1' },
      { user: 'gone', kind: 'mention', id: 'm1' },
      { user: 'kept', kind: 'like', id: 'l1' },
    ]);
    await service.retractCounterEvent('gone', 'comment', 'c1');
    await service.read('gone', { scope: 'counter', kind: 'like', upTo: 0 });
    if (engine === 'memory') {
      // Both unseen for the window; the kept one is seen again first.
      advance(31 * DAY_MS);
      await service.badge('kept', { seen: true });
    } else {
      // The Redis stamps keep the server's time: drop the user through the store itself.
      await store.counters.dropUsers(['gone']);
    }
    if (engine === 'memory') {
      expect(await service.dropInactiveUsers(100)).toEqual(['gone']);
    }
    expect(await keys('counters:{u:gone}*')).toEqual(engine === 'memory' ? null : []);
    expect((await keys('counters:{u:kept}*'))?.length ?? 1).toBeGreaterThan(0);
    expect(await service.badge('gone')).not.toHaveProperty('counters');
    // Its retracted ids are gone with it: an event of that id counts again.
    expect(
      await service.ingestCounterEvents([{ user: 'gone', kind: 'comment', id: 'c1' }]),
    ).toEqual({ accepted: 1, ignored: 0 });
  });

  it('tells the user’s pool: a counters event after each ingest, retraction and read', async () => {
    const { service, store } = rig();
    const pool = poolOf('u1', TEST_POOLS);
    const read = async () =>
      (await store.changes.readPoolEvents([{ pool, after: LOG_START }], 100)).get(pool)!.entries;
    const before = await read();
    await service.ingestCounterEvents([{ user: 'u1', kind: 'like', id: 'l1' }]);
    // A repeat changes nothing and still tells (the retry of a call that failed after its write).
    await service.ingestCounterEvents([{ user: 'u1', kind: 'like', id: 'l1' }]);
    await service.retractCounterEvent('u1', 'like', 'l1');
    await service.read('u1', { scope: 'counter', kind: 'like' });
    const told = (await read())
      .slice(before.length)
      .map((e) => e.event)
      .filter((e) => e.kind === 'counters');
    expect(told).toEqual([
      { kind: 'counters', user: 'u1' },
      { kind: 'counters', user: 'u1' },
      { kind: 'counters', user: 'u1' },
      { kind: 'counters', user: 'u1' },
    ]);
  });

  it('a batch of many users is one atomic call per user (Cluster: each in its own slot)', async () => {
    const { service } = rig();
    const users = Array.from({ length: 40 }, (_, i) => `many${i}`);
    const events = users.flatMap((user) => [
      { user, kind: 'like', id: 'a' },
      { user, kind: 'mention', id: 'b' },
      { user, kind: 'like', id: 'a' },
    ]);
    expect(await service.ingestCounterEvents(events)).toEqual({ accepted: 80, ignored: 40 });
    const badges = await service.badges(users);
    for (const badge of badges) expect(badge.counters).toEqual({ like: 1, mention: 1 });
  });

  if (engine === 'memory') {
    it('events older than BUBBLE_INACTIVE_DAYS no longer count, nor do their retractions', async () => {
      const { service, advance } = rig();
      await service.ingestCounterEvents([{ user: 'u1', kind: 'like', id: 'old' }]);
      await service.retractCounterEvent('u1', 'like', 'retracted');
      advance(20 * DAY_MS);
      await service.ingestCounterEvents([{ user: 'u1', kind: 'like', id: 'new' }]);
      expect(counters(await service.badge('u1'))).toEqual({ like: 2 });
      advance(10 * DAY_MS + 1);
      expect(counters(await service.badge('u1'))).toEqual({ like: 1 });
      // Retracted more than the window ago: forgotten, so an ingest of it counts.
      expect(
        await service.ingestCounterEvents([{ user: 'u1', kind: 'like', id: 'retracted' }]),
      ).toEqual({ accepted: 1, ignored: 0 });
      advance(30 * DAY_MS);
      expect(await service.badge('u1')).not.toHaveProperty('counters');
    });
  } else {
    it('events older than the window no longer count, nor do their retractions, nor the keys', async () => {
      // The window on the server’s clock (TIME cannot be moved): 1 s instead of 30 days.
      const { store, keys } = rig();
      const windowMs = 1_000;
      await store.counters.ingest([{ user: 'w1', kind: 'like', id: 'old' }], windowMs);
      await store.counters.retract({ user: 'w1', kind: 'like', id: 'gone' }, windowMs);
      // Within the window the retraction holds.
      expect(
        await store.counters.ingest([{ user: 'w1', kind: 'like', id: 'gone' }], windowMs),
      ).toEqual({ accepted: 0, ignored: 1 });
      expect((await store.counters.counts('w1', ['like'], windowMs)).counts).toEqual({ like: 1 });
      await waitFor(
        async () =>
          (await store.counters.counts('w1', ['like'], windowMs)).counts.like === undefined,
        { timeoutMs: 5_000 },
      );
      // Past it, the retraction is forgotten: an ingest of the id counts (an ignored one writes
      // nothing, so polling with it changes nothing).
      await waitFor(
        async () =>
          (await store.counters.ingest([{ user: 'w1', kind: 'like', id: 'gone' }], windowMs))
            .accepted === 1,
        { timeoutMs: 5_000 },
      );
      // Every key of the user expires a window after its last write.
      await waitFor(async () => (await keys('counters:{u:w1}*'))!.length === 0, {
        timeoutMs: 5_000,
      });
    });
  }
}

describe('interaction counters [memory]', () => {
  let current: Rig | undefined;
  beforeEach(() => {
    const clock = new ManualClock(T0);
    const store = new MemoryStore({ pools: TEST_POOLS, now: () => clock.now() });
    current = {
      store,
      service: new BadgeService(store, clock),
      advance: (ms) => clock.advance(ms),
      keys: async () => null,
    };
  });
  counterSuite('memory', () => current!);
});

function redisRig(client: Redis | Cluster): Rig {
  const prefix = uniquePrefix('counters');
  const store = new RedisStore({ client, keyPrefix: prefix, pools: TEST_POOLS });
  // The host's clock, which is the local redis-server's: the stamps are on its TIME.
  return {
    store,
    service: new BadgeService(store, { now: () => Date.now() }),
    advance: () => {},
    keys: async (pattern) => {
      const full = `${prefix}:${pattern}`;
      if (client instanceof Cluster) {
        const all = await Promise.all(
          client.nodes('master').map((node) => scanKeys(node as unknown as Redis, full)),
        );
        return all.flat();
      }
      return scanKeys(client, full);
    },
  };
}

describe('interaction counters [redis]', () => {
  let server: RedisServerHandle | undefined;
  let client: Redis | undefined;
  let current: Rig | undefined;
  beforeAll(async () => {
    server = await startRedisServer();
    client = new Redis(server.url, { enableAutoPipelining: true });
  });
  afterAll(async () => {
    await client?.quit().catch(() => client?.disconnect());
    await server?.stop();
  });
  beforeEach(() => {
    current = redisRig(client!);
  });
  afterEach(async () => {
    await current?.store.close();
  });
  counterSuite('redis', () => current!);
});

describe('interaction counters [3-master Redis Cluster]', () => {
  const cluster = useRedisCluster();
  let current: Rig | undefined;
  beforeEach(() => {
    current = redisRig(cluster.client);
  });
  afterEach(async () => {
    await current?.store.close();
  });
  counterSuite('cluster', () => current!);
});
