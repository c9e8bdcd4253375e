/**
 * The BubbleStore contract (packages/store/src/bubble-store/bubble-store.ts), run against both engines, plus the
 * feed-bubble rules of BadgeService (docs/semantics.md, "Feed bubble") on top of
 * each engine. Both engines must pass the very same assertions.
 */
import {
  BubbleError,
  DAY_MS,
  HOUR_MS,
  MINUTE_MS,
  mulberry32,
  poolOf,
  type ErrorCode,
} from '@bubble/protocol';
import {
  LOG_START,
  RedisStore,
  type BubbleStore,
  type PoolEvent,
  type Post,
  type PostEvent,
} from '@bubble/store';
import { expect, it } from 'vitest';
import { T0, describeEachEngine, manualService, scanKeys } from '../support/engines.js';

const L = 7 * DAY_MS;

async function codeOf(promise: Promise<unknown>): Promise<ErrorCode | 'resolved' | 'other'> {
  try {
    await promise;
    return 'resolved';
  } catch (error) {
    return error instanceof BubbleError ? error.code : 'other';
  }
}

async function expectBubbleError(
  promise: Promise<unknown>,
  code: ErrorCode,
  status?: number,
): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error, `expected ${code}`).toBeInstanceOf(BubbleError);
  expect((error as BubbleError).code).toBe(code);
  if (status !== undefined) expect((error as BubbleError).status).toBe(status);
}

/** An integer in [0, n) from the shared seeded random (mulberry32, @bubble/protocol). */
function seededRandom(seed: number): (n: number) => number {
  const random = mulberry32(seed);
  return (n) => Math.floor(random() * n);
}

const sorted = (values: readonly string[]): string[] => [...values].sort();

/** Every stored post of `author` regardless of ts (the store has no list call; count them). */
function countAll(store: BubbleStore, authors: readonly string[]): Promise<number> {
  return store.posts.countBetween(authors, -1, Number.MAX_SAFE_INTEGER);
}

/** Every event of the post change log, oldest first. */
async function postEvents(store: BubbleStore): Promise<PostEvent[]> {
  const read = await store.changes.readPostEvents(LOG_START, 1000);
  return read.entries.map((entry) => entry.event);
}

/** Every event of the change log of `user`'s pool (whoever they are about), oldest first. */
async function poolEvents(store: BubbleStore, user: string): Promise<PoolEvent[]> {
  const pool = poolOf(user, store.pools);
  const read = (await store.changes.readPoolEvents([{ pool, after: LOG_START }], 1000)).get(pool);
  return read!.entries.map((entry) => entry.event);
}

/** Every event of every pool's change log. */
async function allPoolEvents(store: BubbleStore): Promise<PoolEvent[]> {
  const cursors = Array.from({ length: store.pools }, (_, pool) => ({ pool, after: LOG_START }));
  const reads = await store.changes.readPoolEvents(cursors, 1000);
  return [...reads.values()].flatMap((read) => read.entries.map((entry) => entry.event));
}

describeEachEngine('BubbleStore contract', (ctx) => {
  // ---------------------------------------------------------------- follows

  it('follow adds once, then reports exists; list returns the set', async () => {
    const { store } = ctx();
    expect(await store.follows.list('u')).toEqual([]);
    expect(await store.follows.follow('u', 'a', 10)).toBe('added');
    expect(await store.follows.follow('u', 'b', 10)).toBe('added');
    expect(await store.follows.follow('u', 'a', 10)).toBe('exists');
    expect(sorted(await store.follows.list('u'))).toEqual(['a', 'b']);
    expect(await store.follows.list('other')).toEqual([]);
  });

  it('follow refuses one more than the cap with UB_ERR_FOLLOW_CAP, but exists wins', async () => {
    const { store } = ctx();
    for (const a of ['a', 'b', 'c']) expect(await store.follows.follow('u', a, 3)).toBe('added');
    await expectBubbleError(store.follows.follow('u', 'd', 3), 'UB_ERR_FOLLOW_CAP', 409);
    // Already followed: not a growth, so the cap does not apply.
    expect(await store.follows.follow('u', 'b', 3)).toBe('exists');
    expect(sorted(await store.follows.list('u'))).toEqual(['a', 'b', 'c']);
    // Room again after an unfollow.
    expect(await store.follows.unfollow('u', 'a')).toBe(true);
    expect(await store.follows.follow('u', 'd', 3)).toBe('added');
    expect(sorted(await store.follows.list('u'))).toEqual(['b', 'c', 'd']);
    // A cap of 0 refuses everything.
    await expectBubbleError(store.follows.follow('v', 'a', 0), 'UB_ERR_FOLLOW_CAP');
    expect(await store.follows.list('v')).toEqual([]);
  });

  it('unfollow reports whether anything was removed', async () => {
    const { store } = ctx();
    expect(await store.follows.unfollow('u', 'a')).toBe(false);
    await store.follows.follow('u', 'a', 10);
    expect(await store.follows.unfollow('u', 'a')).toBe(true);
    expect(await store.follows.unfollow('u', 'a')).toBe(false);
    expect(await store.follows.list('u')).toEqual([]);
  });

  it('replace sets the whole list, and an empty list empties it', async () => {
    const { store } = ctx();
    await store.follows.follow('u', 'a', 10);
    await store.follows.follow('u', 'b', 10);
    await store.follows.replace('u', ['c', 'd', 'e']);
    expect(sorted(await store.follows.list('u'))).toEqual(['c', 'd', 'e']);
    await store.follows.replace('u', []);
    expect(await store.follows.list('u')).toEqual([]);
    await store.follows.replace('u', ['x']);
    expect(await store.follows.list('u')).toEqual(['x']);
    // Following after a replace sees the new size for the cap.
    await expectBubbleError(store.follows.follow('u', 'y', 1), 'UB_ERR_FOLLOW_CAP');
    expect(await store.follows.follow('u', 'y', 2)).toBe('added');
  });

  it('replace is atomic: concurrent readers see the old set or the new one, never a mix', async () => {
    const { store } = ctx();
    const before = Array.from({ length: 3000 }, (_, i) => `old${i}`);
    const after = Array.from({ length: 3000 }, (_, i) => `new${i}`);
    await store.follows.replace('u', before);
    const reads: Promise<string[]>[] = [];
    const writes: Promise<void>[] = [];
    for (let round = 0; round < 4; round++) {
      reads.push(store.follows.list('u'));
      writes.push(store.follows.replace('u', round % 2 === 0 ? after : before));
      reads.push(
        store.follows.list('u'),
        store.feedInputs('u').then((i) => i.follows),
      );
    }
    await Promise.all(writes);
    const oldKey = sorted(before).join(',');
    const newKey = sorted(after).join(',');
    for (const seen of await Promise.all(reads)) {
      expect([oldKey, newKey]).toContain(sorted(seen).join(','));
    }
    expect(sorted(await store.follows.list('u')).join(',')).toBe(oldKey);
  });

  // ---------------------------------------------------------------- posts

  it('ingest is idempotent on (author, id): the first ts wins, across and within batches', async () => {
    const { store } = ctx();
    expect(await store.posts.ingest([{ author: 'a', id: 'p', ts: 100 }], 0)).toEqual({
      accepted: 1,
      ignored: 0,
      stored: [{ author: 'a', id: 'p', ts: 100 }],
    });
    // Same post again, with another ts: counted as accepted (stored already), ts unchanged,
    // and not stored by this call.
    expect(await store.posts.ingest([{ author: 'a', id: 'p', ts: 200 }], 0)).toEqual({
      accepted: 1,
      ignored: 0,
      stored: [],
    });
    expect(await store.posts.countBetween(['a'], 0, 150)).toBe(1);
    expect(await store.posts.countBetween(['a'], 150, 300)).toBe(0);
    // Within one batch the first occurrence wins, too.
    const batch: Post[] = [
      { author: 'b', id: 'q', ts: 300 },
      { author: 'b', id: 'q', ts: 50 },
      { author: 'a', id: 'q', ts: 60 },
    ];
    expect(await store.posts.ingest(batch, 0)).toEqual({
      accepted: 3,
      ignored: 0,
      stored: [
        { author: 'b', id: 'q', ts: 300 },
        { author: 'a', id: 'q', ts: 60 },
      ],
    });
    expect(await store.posts.countBetween(['b'], 0, 299)).toBe(0);
    expect(await store.posts.countBetween(['b'], 0, 300)).toBe(1);
    // Same id under another author is another post.
    expect(await store.posts.countBetween(['a'], 0, 100)).toBe(2);
    expect(await countAll(store, ['a', 'b'])).toBe(3);
  });

  it('a post at or before minTs is ignored and not stored, so it claims no id', async () => {
    const { store } = ctx();
    const minTs = 1_000;
    expect(
      await store.posts.ingest(
        [
          { author: 'a', id: 'old', ts: minTs },
          { author: 'a', id: 'older', ts: minTs - 500 },
          { author: 'a', id: 'new', ts: minTs + 1 },
        ],
        minTs,
      ),
    ).toEqual({ accepted: 1, ignored: 2, stored: [{ author: 'a', id: 'new', ts: minTs + 1 }] });
    expect(await countAll(store, ['a'])).toBe(1);
    // The ignored ids were never claimed: a later ingest with a ts in the window stores them.
    expect(await store.posts.ingest([{ author: 'a', id: 'old', ts: 5_000 }], minTs)).toEqual({
      accepted: 1,
      ignored: 0,
      stored: [{ author: 'a', id: 'old', ts: 5_000 }],
    });
    expect(await store.posts.countBetween(['a'], 4_999, 5_000)).toBe(1);
    // Ignored first, then accepted in the same batch: the accepted one's ts is stored.
    expect(
      await store.posts.ingest(
        [
          { author: 'c', id: 'x', ts: 10 },
          { author: 'c', id: 'x', ts: 2_000 },
        ],
        minTs,
      ),
    ).toEqual({ accepted: 1, ignored: 1, stored: [{ author: 'c', id: 'x', ts: 2_000 }] });
    expect(await store.posts.countBetween(['c'], 1_999, 2_000)).toBe(1);
  });

  it('ingest trims entries at or before minTs', async () => {
    const { store, admin } = ctx();
    await store.posts.ingest(
      [
        { author: 'a', id: 'p1', ts: 100 },
        { author: 'a', id: 'p2', ts: 200 },
        { author: 'a', id: 'p3', ts: 300 },
      ],
      0,
    );
    expect(await countAll(store, ['a'])).toBe(3);
    await store.posts.ingest([{ author: 'a', id: 'p4', ts: 400 }], 200);
    // p1 and p2 (at or before 200) are gone even to a count that asks for them.
    expect(await countAll(store, ['a'])).toBe(2);
    expect(await store.posts.countBetween(['a'], 0, 200)).toBe(0);
    if (store instanceof RedisStore && admin) {
      expect(await admin.zrange(store.keys.posts('a'), '0', '-1')).toEqual(['p3', 'p4']);
    }
    // Once trimmed, the id is forgotten: the index only remembers the lookback window.
    expect(await store.posts.ingest([{ author: 'a', id: 'p1', ts: 500 }], 200)).toEqual({
      accepted: 1,
      ignored: 0,
      stored: [{ author: 'a', id: 'p1', ts: 500 }],
    });
    expect(await store.posts.countBetween(['a'], 499, 500)).toBe(1);
  });

  it('a deleted post stops counting and cannot be re-ingested within the window', async () => {
    const { store } = ctx();
    await store.posts.ingest(
      [
        { author: 'a', id: 'p', ts: 100 },
        { author: 'a', id: 'q', ts: 110 },
      ],
      0,
    );
    expect(await store.posts.remove('a', 'p', 150, 0)).toBe(100);
    expect(await countAll(store, ['a'])).toBe(1);
    expect(await store.posts.countBetween(['a'], 99, 100)).toBe(0);
    // Retried (same ts) or late (another ts) ingest: ignored, nothing stored.
    expect(await store.posts.ingest([{ author: 'a', id: 'p', ts: 100 }], 50)).toEqual({
      accepted: 0,
      ignored: 1,
      stored: [],
    });
    expect(
      await store.posts.ingest(
        [
          { author: 'a', id: 'p', ts: 160 },
          { author: 'a', id: 'r', ts: 170 },
        ],
        60,
      ),
    ).toEqual({ accepted: 1, ignored: 1, stored: [{ author: 'a', id: 'r', ts: 170 }] });
    expect(await countAll(store, ['a'])).toBe(2);
    expect(await store.posts.countBetween(['a'], 150, 165)).toBe(0);
    // Deleting again is harmless, and removes nothing.
    expect(await store.posts.remove('a', 'p', 180, 60)).toBeNull();
    expect(await countAll(store, ['a'])).toBe(2);
  });

  it('deleting an unknown post is fine and blocks its later ingest', async () => {
    const { store } = ctx();
    expect(await store.posts.remove('a', 'ghost', 1_000, 0)).toBeNull();
    expect(await countAll(store, ['a'])).toBe(0);
    expect(await store.posts.ingest([{ author: 'a', id: 'ghost', ts: 900 }], 0)).toEqual({
      accepted: 0,
      ignored: 1,
      stored: [],
    });
    expect(await store.posts.ingest([{ author: 'a', id: 'ghost', ts: 1_050 }], 0)).toEqual({
      accepted: 0,
      ignored: 1,
      stored: [],
    });
    expect(await countAll(store, ['a'])).toBe(0);
  });

  it('a tombstone lasts while its post could still be in the window, then is dropped', async () => {
    const { store } = ctx();
    const now = 10 * DAY_MS;
    await store.posts.ingest([{ author: 'a', id: 'p', ts: now - HOUR_MS }], now - L);
    await store.posts.remove('a', 'p', now, now - L);
    // Just before the tombstone expires: still refused.
    const later = now + L - 1;
    expect(await store.posts.ingest([{ author: 'a', id: 'p', ts: later }], later - L)).toEqual({
      accepted: 0,
      ignored: 1,
      stored: [],
    });
    // Once minTs reaches the deletion time the old post is out of every window anyway,
    // so the id is free again.
    const free = now + L;
    expect(await store.posts.ingest([{ author: 'a', id: 'p', ts: free }], free - L)).toEqual({
      accepted: 1,
      ignored: 0,
      stored: [{ author: 'a', id: 'p', ts: free }],
    });
  });

  it('a post stamped ahead of the clock keeps its tombstone until its own ts leaves the window', async () => {
    const { store } = ctx();
    const now = 10 * DAY_MS;
    const ts = now + 60_000;
    await store.posts.ingest([{ author: 'a', id: 'p', ts }], now - L);
    await store.posts.remove('a', 'p', now, now - L);
    // Deleting it again a little later must not shorten the tombstone.
    await store.posts.remove('a', 'p', now + 1_000, now + 1_000 - L);
    const later = now + 30_000 + L;
    // A retry of the original ingest would still be inside the window (ts > later - L).
    expect(await store.posts.ingest([{ author: 'a', id: 'p', ts }], later - L)).toEqual({
      accepted: 0,
      ignored: 1,
      stored: [],
    });
    expect(await countAll(store, ['a'])).toBe(0);
  });

  it('countBetween: lower bound exclusive, upper bound inclusive', async () => {
    const { store } = ctx();
    await store.posts.ingest(
      [
        { author: 'a', id: 'p10', ts: 10 },
        { author: 'a', id: 'p20', ts: 20 },
        { author: 'a', id: 'p20b', ts: 20 },
        { author: 'a', id: 'p30', ts: 30 },
      ],
      0,
    );
    const count = (after: number, until: number) => store.posts.countBetween(['a'], after, until);
    expect(await count(9, 30)).toBe(4);
    expect(await count(10, 30)).toBe(3);
    expect(await count(10, 29)).toBe(2);
    expect(await count(19, 20)).toBe(2);
    expect(await count(20, 20)).toBe(0);
    expect(await count(30, 20)).toBe(0);
    expect(await count(30, 1_000)).toBe(0);
    expect(await count(0, 9)).toBe(0);
    expect(await store.posts.countBetween([], 0, 1_000)).toBe(0);
    expect(await store.posts.countBetween(['nobody'], 0, 1_000)).toBe(0);
    // Duplicates in the author list are not the store's business; the caller de-duplicates.
  });

  it('countBetween over many authors equals a brute-force count', async () => {
    const { store } = ctx();
    const rand = seededRandom(42);
    const posts: Post[] = [];
    for (let a = 0; a < 300; a++) {
      const n = rand(5);
      for (let i = 0; i < n; i++) posts.push({ author: `a${a}`, id: `p${i}`, ts: 1 + rand(1_000) });
    }
    for (let i = 0; i < posts.length; i += 500)
      await store.posts.ingest(posts.slice(i, i + 500), 0);
    const authors = Array.from({ length: 300 }, (_, a) => `a${a}`).filter((_, a) => a % 3 !== 0);
    const wanted = new Set(authors);
    for (const [after, until] of [
      [0, 1_000],
      [250, 750],
      [500, 500],
      [999, 1_000],
      [-5, 3],
    ] as const) {
      const expected = posts.filter(
        (p) => wanted.has(p.author) && after < p.ts && p.ts <= until,
      ).length;
      expect(await store.posts.countBetween(authors, after, until)).toBe(expected);
    }
  });

  it('ingest reports exactly the posts it stored first, in input order across authors', async () => {
    const { store } = ctx();
    await store.posts.ingest([{ author: 'a', id: 'known', ts: 500 }], 0);
    await store.posts.remove('c', 'gone', 600, 0);
    const batch: Post[] = [
      { author: 'b', id: 'p1', ts: 700 },
      { author: 'a', id: 'p1', ts: 710 },
      { author: 'a', id: 'known', ts: 720 }, // stored before: accepted, not stored now
      { author: 'c', id: 'gone', ts: 730 }, // deleted: ignored
      { author: 'b', id: 'p2', ts: 740 },
      { author: 'a', id: 'old', ts: 100 }, // at or before minTs: ignored
      { author: 'b', id: 'p1', ts: 750 }, // repeat within the batch: the first one was stored
      { author: 'c', id: 'p1', ts: 760 },
      { author: 'a', id: 'p2', ts: 705 },
    ];
    expect(await store.posts.ingest(batch, 100)).toEqual({
      accepted: 7,
      ignored: 2,
      stored: [
        { author: 'b', id: 'p1', ts: 700 },
        { author: 'a', id: 'p1', ts: 710 },
        { author: 'b', id: 'p2', ts: 740 },
        { author: 'c', id: 'p1', ts: 760 },
        { author: 'a', id: 'p2', ts: 705 },
      ],
    });
    // The same batch again stores nothing new.
    expect(await store.posts.ingest(batch, 100)).toEqual({ accepted: 7, ignored: 2, stored: [] });
    expect(await store.posts.ingest([], 100)).toEqual({ accepted: 0, ignored: 0, stored: [] });
  });

  it('remove returns the ts of the stored post it removed, else null', async () => {
    const { store } = ctx();
    const now = 10 * DAY_MS;
    await store.posts.ingest(
      [
        { author: 'a', id: 'p', ts: now - HOUR_MS },
        { author: 'a', id: 'ahead', ts: now + 30_000 },
        { author: 'b', id: 'p', ts: now - MINUTE_MS },
      ],
      now - L,
    );
    expect(await store.posts.remove('a', 'p', now, now - L)).toBe(now - HOUR_MS);
    // Removed already: nothing to remove, though the tombstone is renewed.
    expect(await store.posts.remove('a', 'p', now + 1, now + 1 - L)).toBeNull();
    // A post stamped ahead of the clock reports its own ts.
    expect(await store.posts.remove('a', 'ahead', now, now - L)).toBe(now + 30_000);
    // Never stored, under a known author or an unknown one.
    expect(await store.posts.remove('a', 'ghost', now, now - L)).toBeNull();
    expect(await store.posts.remove('nobody', 'p', now, now - L)).toBeNull();
    // The same id under another author is another post, still stored.
    expect(await countAll(store, ['b'])).toBe(1);
    expect(await store.posts.remove('b', 'p', now, now - L)).toBe(now - MINUTE_MS);
    expect(await countAll(store, ['a', 'b'])).toBe(0);
    // A post trimmed out of the window is no longer stored.
    await store.posts.ingest([{ author: 'c', id: 'p', ts: now - 2 * DAY_MS }], now - L);
    await store.posts.ingest([{ author: 'c', id: 'q', ts: now }], now - DAY_MS);
    expect(await store.posts.remove('c', 'p', now, now - DAY_MS)).toBeNull();
  });

  it('window: each author’s posts after afterTs (exclusive), ordered by ts', async () => {
    const { store } = ctx();
    // Ingested out of ts order, over two batches.
    await store.posts.ingest(
      [
        { author: 'a', id: 'p30', ts: 30 },
        { author: 'b', id: 'q25', ts: 25 },
        { author: 'a', id: 'p10', ts: 10 },
      ],
      0,
    );
    await store.posts.ingest(
      [
        { author: 'a', id: 'p20', ts: 20 },
        { author: 'b', id: 'q5', ts: 5 },
        { author: 'a', id: 'p40', ts: 40 },
        { author: 'a', id: 'p10', ts: 35 }, // stored already: its first ts stays
      ],
      0,
    );
    await store.posts.remove('a', 'p40', 50, 0);
    const window = await store.posts.window(['a', 'b', 'nobody'], 10);
    expect([...window.keys()].sort()).toEqual(['a', 'b', 'nobody']);
    expect(window.get('a')).toEqual([
      { id: 'p20', ts: 20 },
      { id: 'p30', ts: 30 },
    ]);
    expect(window.get('b')).toEqual([{ id: 'q25', ts: 25 }]);
    expect(window.get('nobody')).toEqual([]);
    // afterTs is exclusive.
    expect((await store.posts.window(['a'], 9)).get('a')).toEqual([
      { id: 'p10', ts: 10 },
      { id: 'p20', ts: 20 },
      { id: 'p30', ts: 30 },
    ]);
    expect((await store.posts.window(['a'], 29)).get('a')).toEqual([{ id: 'p30', ts: 30 }]);
    expect((await store.posts.window(['a'], 30)).get('a')).toEqual([]);
    expect((await store.posts.window(['b'], -1)).get('b')).toEqual([
      { id: 'q5', ts: 5 },
      { id: 'q25', ts: 25 },
    ]);
    expect((await store.posts.window([], 0)).size).toBe(0);
    // Trimmed posts are gone from it.
    await store.posts.ingest([{ author: 'a', id: 'p50', ts: 50 }], 20);
    expect((await store.posts.window(['a'], 0)).get('a')).toEqual([
      { id: 'p30', ts: 30 },
      { id: 'p50', ts: 50 },
    ]);
  });

  it('window over many authors equals a brute-force listing', async () => {
    const { store } = ctx();
    const rand = seededRandom(4242);
    const posts: Post[] = [];
    for (let a = 0; a < 300; a++) {
      const n = rand(6);
      for (let i = 0; i < n; i++) posts.push({ author: `a${a}`, id: `p${i}`, ts: 1 + rand(1_000) });
    }
    for (let i = 0; i < posts.length; i += 500)
      await store.posts.ingest(posts.slice(i, i + 500), 0);
    // Every third author is asked for, plus some who never posted.
    const authors = [
      ...Array.from({ length: 300 }, (_, a) => `a${a}`).filter((_, a) => a % 3 !== 0),
      'ghost1',
      'ghost2',
    ];
    // The contract orders by ts only; equal ts are compared as a set, so sort those by id.
    const normalised = (list: readonly { id: string; ts: number }[] | undefined) =>
      [...(list ?? [])].sort((x, y) => x.ts - y.ts || (x.id < y.id ? -1 : x.id > y.id ? 1 : 0));
    for (const afterTs of [0, 250, 500, 999, 1_000]) {
      const window = await store.posts.window(authors, afterTs);
      expect(window.size).toBe(authors.length);
      for (const author of authors) {
        const listed = window.get(author);
        expect(listed, author).toBeDefined();
        const times = listed!.map((p) => p.ts);
        expect(times, author).toEqual([...times].sort((x, y) => x - y));
        const expected = posts
          .filter((p) => p.author === author && p.ts > afterTs)
          .map(({ id, ts }) => ({ id, ts }));
        expect(normalised(listed), `${author} after ${afterTs}`).toEqual(normalised(expected));
      }
    }
  });

  // ---------------------------------------------------------------- cursors

  it('the feed cursor is null until set, then only moves forward', async () => {
    const { store } = ctx();
    expect(await store.cursors.feedReadAt('u')).toBeNull();
    expect(await store.cursors.advanceFeedReadAt('u', T0)).toBe(T0);
    expect(await store.cursors.advanceFeedReadAt('u', T0 - 1)).toBe(T0);
    expect(await store.cursors.feedReadAt('u')).toBe(T0);
    expect(await store.cursors.advanceFeedReadAt('u', T0 + 5)).toBe(T0 + 5);
    expect(await store.cursors.feedReadAt('u')).toBe(T0 + 5);
    expect(await store.cursors.feedReadAt('v')).toBeNull();
    // Concurrent advances: the greatest wins.
    const targets = [T0 + 100, T0 + 50, T0 + 300, T0 + 200];
    await Promise.all(targets.map((t) => store.cursors.advanceFeedReadAt('w', t)));
    expect(await store.cursors.feedReadAt('w')).toBe(T0 + 300);
  });

  // ---------------------------------------------------------------- badges

  it('badge states: fresh epoch at version 1, bump only on change, zeros not stored', async () => {
    const { store } = ctx();
    expect(await store.badges.load('u')).toBeNull();
    const first = await store.badges.save('u', { f: 3, n: 0 }, 1_000);
    expect(first.version).toBe(1);
    expect(first.changed).toBe(true);
    expect(first.epoch).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(await store.badges.load('u')).toEqual({
      epoch: first.epoch,
      version: 1,
      computedAt: 1_000,
      fields: { f: 3 },
    });

    // Same fields (a zero field is the same as an absent one): same version, new computedAt.
    expect(await store.badges.save('u', { f: 3 }, 2_000)).toEqual({
      epoch: first.epoch,
      version: 1,
      changed: false,
    });
    expect((await store.badges.load('u'))?.computedAt).toBe(2_000);

    const second = await store.badges.save('u', { f: 4, n: 2 }, 3_000);
    expect(second).toEqual({ epoch: first.epoch, version: 2, changed: true });
    expect(await store.badges.load('u')).toEqual({
      epoch: first.epoch,
      version: 2,
      computedAt: 3_000,
      fields: { f: 4, n: 2 },
    });

    // A field going to zero is a change, and the zero is not stored.
    expect(await store.badges.save('u', { f: 0, n: 2 }, 4_000)).toEqual({
      epoch: first.epoch,
      version: 3,
      changed: true,
    });
    expect((await store.badges.load('u'))?.fields).toEqual({ n: 2 });
    // Back to a former state is still a new state.
    expect((await store.badges.save('u', { f: 4, n: 2 }, 5_000)).version).toBe(4);

    // Another user has their own epoch and versions.
    const other = await store.badges.save('v', {}, 6_000);
    expect(other.version).toBe(1);
    expect(other.changed).toBe(true);
    expect(other.epoch).not.toBe(first.epoch);
    expect(await store.badges.load('v')).toEqual({
      epoch: other.epoch,
      version: 1,
      computedAt: 6_000,
      fields: {},
    });
    expect(await store.badges.save('v', { f: 0 }, 7_000)).toEqual({
      epoch: other.epoch,
      version: 1,
      changed: false,
    });
  });

  it('concurrent saves of one user hand out distinct versions', async () => {
    const { store } = ctx();
    const stamps = await Promise.all(
      Array.from({ length: 20 }, (_, i) => store.badges.save('u', { f: i + 1 }, i)),
    );
    const versions = stamps.map((s) => s.version).sort((a, b) => a - b);
    expect(versions).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(new Set(stamps.map((s) => s.epoch)).size).toBe(1);
  });

  // ---------------------------------------------------------------- feedInputs

  it('feedInputs returns follows, topic follows and the read cursor together', async () => {
    const { store } = ctx();
    expect(await store.feedInputs('u')).toEqual({ follows: [], topics: [], readAt: null });
    await store.follows.follow('u', 'a', 10);
    await store.follows.follow('u', 'b', 10);
    await store.topics.follow('u', 'cats', 10);
    await store.cursors.advanceFeedReadAt('u', T0);
    const inputs = await store.feedInputs('u');
    expect(sorted(inputs.follows)).toEqual(['a', 'b']);
    expect(inputs.topics).toEqual(['cats']);
    expect(inputs.readAt).toBe(T0);
    await store.ping();
  });

  it('userInputs gives each user feedInputs, marks.state, conversation index and counter counts, in input order', async () => {
    const { store } = ctx();
    const users = ['u', 'constructor', '__proto__', 'nobody'];
    const scope = { kinds: ['like', 'mention', 'comment', 'constructor'], windowMs: 60_000 };
    await store.follows.follow('u', 'a', 10);
    await store.topics.follow('constructor', 'hasOwnProperty', 10);
    await store.cursors.advanceFeedReadAt('__proto__', T0);
    await store.marks.advanceSeen('u', 7);
    await store.marks.click('__proto__', ['toString', '__proto__'], T0 + 5);
    await store.conversations.replaceMembers('c1', ['u', '__proto__']);
    await store.conversations.addMembers('c2', ['u']);
    await store.counters.ingest(
      [
        { user: 'u', kind: 'like', id: 'l1' },
        { user: 'u', kind: 'like', id: 'l2' },
        { user: 'u', kind: 'constructor', id: 'k1' },
        { user: 'nobody', kind: 'reshare', id: 'r1' },
      ],
      scope.windowMs,
    );
    const inputs = await store.userInputs(users, scope);
    const seqs = await store.conversations.membershipSeqs(users);
    const one = await Promise.all(
      users.map(async (user, i) => ({
        feed: await store.feedInputs(user),
        marks: await store.marks.state(user),
        conversations: seqs[i]!.map((m) => m.conversation),
        counts: (await store.counters.counts(user, scope.kinds, scope.windowMs)).counts,
      })),
    );
    expect(
      inputs.map(({ feed, marks, conversations, counters }) => ({
        feed,
        marks,
        conversations: sorted(conversations),
        counts: counters.counts,
      })),
    ).toEqual(one.map((o) => ({ ...o, conversations: sorted(o.conversations) })));
    expect(inputs[0]!.counters.counts).toEqual({ like: 2, constructor: 1 });
    expect(sorted(inputs[0]!.conversations)).toEqual(['c1', 'c2']);
    // A watermark only where there is counter state (`nobody`'s is of a kind not asked).
    expect(inputs[0]!.counters.asOf).toBeGreaterThan(0);
    expect(inputs[3]!.counters.asOf).toBeGreaterThan(0);
    expect(inputs.slice(1, 3).map((i) => i.counters.asOf)).toEqual([null, null]);
    const clicks = inputs[2]!.marks.clicks;
    expect(Object.keys(clicks).sort()).toEqual(['__proto__', 'toString']);
    expect([clicks['__proto__'], clicks['toString']]).toEqual([T0 + 5, T0 + 5]);
    expect(inputs[0]!.marks.seen).toBe(7);
    // No kind asked: nothing counted, no watermark.
    const none = await store.userInputs(['u'], { kinds: [], windowMs: scope.windowMs });
    expect(none[0]!.counters).toEqual({ counts: {}, asOf: null });
    expect(await store.userInputs([], scope)).toEqual([]);
  });

  it('userInputs and membershipSeqs of a batch larger than one call answer as user by user', async () => {
    const { store } = ctx();
    const users = Array.from({ length: 450 }, (_, i) => `big${i}`);
    for (let i = 0; i < users.length; i += 3) await store.follows.follow(users[i]!, `a${i}`, 10);
    // 600 conversations: a pair of neighbours each, and 150 more of big0's own.
    for (let i = 0; i < users.length; i++) {
      await store.conversations.replaceMembers(`pc${i}`, [users[i]!, users[(i + 1) % 450]!]);
    }
    for (let k = 0; k < 150; k++) await store.conversations.addMembers(`solo${k}`, ['big0']);
    await store.conversations.setMuted('pc7', 'big8', true);
    const inputs = await store.userInputs(users, { kinds: ['like'], windowMs: 60_000 });
    const seqs = await store.conversations.membershipSeqs(
      users,
      inputs.map((i) => i.conversations),
    );
    for (const [i, user] of users.entries()) {
      expect(inputs[i]!.feed).toEqual(await store.feedInputs(user));
      const [alone] = await store.conversations.membershipSeqs([user]);
      const byId = (a: { conversation: string }, b: { conversation: string }) =>
        a.conversation < b.conversation ? -1 : 1;
      expect([...seqs[i]!].sort(byId)).toEqual([...alone!].sort(byId));
    }
    expect(seqs[0]).toHaveLength(152);
    expect(seqs[8]!.find((m) => m.conversation === 'pc7')!.muted).toBe(true);
  });

  // ---------------------------------------------------------------- BadgeService

  it('service: following yourself is 422 UB_ERR_SELF_FOLLOW, in follow and replace', async () => {
    const { service } = manualService(ctx().store);
    await expectBubbleError(service.follow('u', 'u'), 'UB_ERR_SELF_FOLLOW', 422);
    await expectBubbleError(service.replaceFollows('u', ['a', 'u']), 'UB_ERR_SELF_FOLLOW', 422);
    expect(await service.listFollows('u')).toEqual([]);
  });

  it('service: follow cap in follow and replaceFollows (after de-duplication)', async () => {
    const { service } = manualService(ctx().store, { rules: { followCap: 2 } });
    await service.replaceFollows('u', ['a', 'b', 'a', 'b']);
    expect(await service.listFollows('u')).toEqual(['a', 'b']);
    await expectBubbleError(service.replaceFollows('u', ['a', 'b', 'c']), 'UB_ERR_FOLLOW_CAP', 409);
    expect(await service.listFollows('u')).toEqual(['a', 'b']);
    await expectBubbleError(service.follow('u', 'c'), 'UB_ERR_FOLLOW_CAP', 409);
    await service.follow('u', 'a');
    await service.unfollow('u', 'a');
    await service.follow('u', 'c');
    expect(await service.listFollows('u')).toEqual(['b', 'c']);
  });

  it('service: ids are checked (UB_ERR_BAD_ID) before anything is stored', async () => {
    const { store } = ctx();
    const { service, clock } = manualService(store);
    const bad = ['', 'a b', 'x/y', 'é', 'a'.repeat(65), '{u}'];
    for (const id of bad) {
      await expectBubbleError(service.follow(id, 'a'), 'UB_ERR_BAD_ID', 400);
      await expectBubbleError(service.follow('u', id), 'UB_ERR_BAD_ID', 400);
      await expectBubbleError(service.unfollow('u', id), 'UB_ERR_BAD_ID');
      await expectBubbleError(service.replaceFollows('u', ['a', id]), 'UB_ERR_BAD_ID');
      await expectBubbleError(service.replaceFollows(id, ['a']), 'UB_ERR_BAD_ID');
      await expectBubbleError(
        service.ingestPosts([
          { author: 'a', id: 'ok', ts: clock.now() },
          { author: id, id: 'p', ts: clock.now() },
        ]),
        'UB_ERR_BAD_ID',
      );
      await expectBubbleError(
        service.ingestPosts([{ author: 'a', id, ts: clock.now() }]),
        'UB_ERR_BAD_ID',
      );
      await expectBubbleError(service.deletePost('a', id), 'UB_ERR_BAD_ID');
      await expectBubbleError(service.badge(id), 'UB_ERR_BAD_ID');
      await expectBubbleError(service.read(id, { scope: 'feed' }), 'UB_ERR_BAD_ID');
    }
    // The longest and the most varied valid ids are fine.
    const longest = 'a'.repeat(64);
    await service.follow('u', longest);
    await service.follow('u', 'A-z_0.9:@x');
    expect(await service.listFollows('u')).toEqual(['A-z_0.9:@x', longest]);
    expect(await countAll(store, ['a'])).toBe(0);
    expect(await store.follows.list('a')).toEqual([]);
  });

  it('service: a future ts (> now + 60 s) refuses the whole batch and stores nothing', async () => {
    const { store } = ctx();
    const { service, clock } = manualService(store);
    await service.follow('u', 'a');
    const now = clock.now();
    await expectBubbleError(
      service.ingestPosts([
        { author: 'a', id: 'ok', ts: now - 1_000 },
        { author: 'b', id: 'ok', ts: now },
        { author: 'a', id: 'future', ts: now + 60_001 },
      ]),
      'UB_ERR_FUTURE_TS',
      422,
    );
    expect(await countAll(store, ['a', 'b'])).toBe(0);
    expect((await service.badge('u')).feed).toBe(0);
    // Exactly 60 s ahead is allowed; it counts once the clock reaches it.
    expect(
      await service.ingestPosts([
        { author: 'a', id: 'ok', ts: now - 1_000 },
        { author: 'a', id: 'edge', ts: now + 60_000 },
      ]),
    ).toEqual({ accepted: 2, ignored: 0 });
    expect((await service.badge('u')).feed).toBe(1);
    clock.advance(60_000);
    expect((await service.badge('u')).feed).toBe(2);
    expect(await service.ingestPosts([])).toEqual({ accepted: 0, ignored: 0 });
  });

  it('service: a post older than the lookback is ignored and reported as such', async () => {
    const { store } = ctx();
    const { service, clock } = manualService(store);
    const now = clock.now();
    expect(
      await service.ingestPosts([
        { author: 'a', id: 'edge', ts: now - L },
        { author: 'a', id: 'in', ts: now - L + 1 },
        { author: 'a', id: 'old', ts: now - 30 * DAY_MS },
      ]),
    ).toEqual({ accepted: 1, ignored: 2 });
    expect(await countAll(store, ['a'])).toBe(1);
  });

  it('service: a deleted post no longer counts, and a retried ingest is counted as ignored', async () => {
    const { service, clock } = manualService(ctx().store);
    await service.follow('u', 'a');
    await service.ingestPosts([
      { author: 'a', id: 'p', ts: clock.now() - MINUTE_MS },
      { author: 'a', id: 'q', ts: clock.now() - MINUTE_MS },
    ]);
    expect((await service.badge('u')).feed).toBe(2);
    await service.deletePost('a', 'p');
    expect((await service.badge('u')).feed).toBe(1);
    expect(
      await service.ingestPosts([{ author: 'a', id: 'p', ts: clock.now() - MINUTE_MS }]),
    ).toEqual({ accepted: 0, ignored: 1 });
    expect((await service.badge('u')).feed).toBe(1);
    await service.deletePost('a', 'never-seen');
    expect((await service.badge('u')).feed).toBe(1);
  });

  it('service: read with upTo in the future clamps to now', async () => {
    const { service, clock } = manualService(ctx().store);
    await service.follow('u', 'a');
    await service.ingestPosts([{ author: 'a', id: 'p1', ts: clock.now() - 1 }]);
    const start = clock.now();
    const badge = await service.read('u', { scope: 'feed', upTo: start + HOUR_MS });
    expect(badge.feed).toBe(0);
    expect(await service.store.cursors.feedReadAt('u')).toBe(start);
    // A post stamped after `now` but before the requested upTo still counts when it is due.
    await service.ingestPosts([{ author: 'a', id: 'p2', ts: start + 30_000 }]);
    clock.advance(MINUTE_MS);
    expect((await service.badge('u')).feed).toBe(1);
  });

  it('service: the read cursor never moves back; upTo in the past reads up to there', async () => {
    const { service, clock } = manualService(ctx().store);
    await service.follow('u', 'a');
    const now = clock.now();
    await service.ingestPosts([
      { author: 'a', id: 'p1', ts: now - 3_000 },
      { author: 'a', id: 'p2', ts: now - 2_000 },
      { author: 'a', id: 'p3', ts: now - 1_000 },
    ]);
    expect((await service.badge('u')).feed).toBe(3);
    // Reading up to a post's own ts reads that post (ts ≤ readAt is read).
    expect((await service.read('u', { scope: 'feed', upTo: now - 2_000 })).feed).toBe(1);
    expect((await service.read('u', { scope: 'feed', upTo: now - 3_000 })).feed).toBe(1);
    expect(await service.store.cursors.feedReadAt('u')).toBe(now - 2_000);
    expect((await service.read('u', { scope: 'all' })).feed).toBe(0);
    expect(await service.store.cursors.feedReadAt('u')).toBe(now);
    clock.advance(5_000);
    expect((await service.read('u', { scope: 'feed', upTo: now - 10_000 })).feed).toBe(0);
    expect(await service.store.cursors.feedReadAt('u')).toBe(now);
    expect((await service.read('u', { scope: 'feed' })).feed).toBe(0);
    expect(await service.store.cursors.feedReadAt('u')).toBe(now + 5_000);
  });

  it('service: a new user, or one away longer than 7 days, sees the posts of the last 7 days', async () => {
    const { service, clock } = manualService(ctx().store);
    await service.replaceFollows('u', ['a', 'b']);
    await service.replaceFollows('old', ['a', 'b']);
    await service.read('old', { scope: 'all' });
    const now = clock.now();
    await service.ingestPosts([
      { author: 'a', id: 'd6', ts: now - 6 * DAY_MS },
      { author: 'b', id: 'd1', ts: now - DAY_MS },
      { author: 'a', id: 'h1', ts: now - HOUR_MS },
    ]);
    expect((await service.badge('u')).feed).toBe(3);
    // `old` read at `now`: nothing new for them.
    expect((await service.badge('old')).feed).toBe(0);
    // Two days later the 6-day-old post is out of the window for the new user.
    clock.advance(2 * DAY_MS);
    await service.ingestPosts([{ author: 'b', id: 'fresh', ts: clock.now() }]);
    expect((await service.badge('u')).feed).toBe(3);
    expect((await service.badge('old')).feed).toBe(1);
    // Eight days after the read: the cursor is older than the lookback, so the window rules.
    clock.advance(6 * DAY_MS);
    await service.ingestPosts([{ author: 'a', id: 'now', ts: clock.now() }]);
    expect((await service.badge('old')).feed).toBe(2);
    expect((await service.badge('u')).feed).toBe(2);
    // Exactly L after a post, it no longer counts (T − L < ts is strict).
    clock.set(now + 2 * DAY_MS + L);
    expect((await service.badge('u')).feed).toBe(1);
  });

  it('service: follow changes take effect at the next computation', async () => {
    const { service, clock } = manualService(ctx().store);
    const ts = clock.now() - MINUTE_MS;
    await service.ingestPosts([
      { author: 'a', id: 'p1', ts },
      { author: 'a', id: 'p2', ts },
      { author: 'b', id: 'p1', ts },
      { author: 'c', id: 'p1', ts },
    ]);
    await service.follow('u', 'a');
    const first = await service.badge('u');
    expect(first.feed).toBe(2);
    expect(first.version).toBe(1);
    await service.follow('u', 'b');
    const second = await service.badge('u');
    expect(second.feed).toBe(3);
    expect(second.version).toBe(2);
    expect(second.epoch).toBe(first.epoch);
    await service.unfollow('u', 'a');
    expect((await service.badge('u')).feed).toBe(1);
    await service.replaceFollows('u', ['a', 'c']);
    expect((await service.badge('u')).feed).toBe(3);
    await service.replaceFollows('u', []);
    const last = await service.badge('u');
    expect(last.feed).toBe(0);
    expect(last.version).toBe(5);
    // Nothing changed: same state, same version.
    expect((await service.badge('u')).version).toBe(5);
  });

  it('service: a cold start over 2000 follows equals a brute-force count', async () => {
    const { store } = ctx();
    const { service, clock } = manualService(store);
    const now = clock.now();
    const authors = Array.from({ length: 2000 }, (_, i) => `author${i}`);
    await service.replaceFollows('u', authors);
    await expectBubbleError(service.follow('u', 'one-more'), 'UB_ERR_FOLLOW_CAP');
    const posts: Post[] = [];
    const rand = seededRandom(7);
    for (let i = 0; i < 2200; i++) {
      const n = rand(4);
      for (let j = 0; j < n; j++) {
        posts.push({ author: `author${i}`, id: `p${j}`, ts: now - rand(9 * DAY_MS) });
      }
    }
    for (let i = 0; i < posts.length; i += 1000) {
      await service.ingestPosts(posts.slice(i, i + 1000));
    }
    await service.read('u', { scope: 'feed', upTo: now - 3 * DAY_MS });
    clock.advance(HOUR_MS);
    const followed = new Set(authors);
    const after = Math.max(now - 3 * DAY_MS, clock.now() - L);
    const expected = posts.filter(
      (p) => followed.has(p.author) && after < p.ts && p.ts <= clock.now(),
    ).length;
    expect(expected).toBeGreaterThan(500);
    const started = performance.now();
    const badge = await service.badge('u');
    const elapsed = performance.now() - started;
    expect(badge.feed).toBe(expected);
    expect(badge.display).toBe('99+');
    // One batch, not 2000 round trips: generous bound, this is not a benchmark.
    expect(elapsed).toBeLessThan(5_000);
  });

  it('service: errors carry the status of their code', async () => {
    const { service, clock } = manualService(ctx().store);
    expect(await codeOf(service.follow('u', 'u'))).toBe('UB_ERR_SELF_FOLLOW');
    expect(
      await codeOf(service.ingestPosts([{ author: 'a', id: 'p', ts: clock.now() + HOUR_MS }])),
    ).toBe('UB_ERR_FUTURE_TS');
    expect(await codeOf(service.ingestPosts([{ author: 'a', id: 'p', ts: -1 }]))).toBe(
      'UB_ERR_BAD_REQUEST',
    );
    expect(await codeOf(service.ingestPosts([{ author: 'a', id: 'p', ts: 1.5 }]))).toBe(
      'UB_ERR_BAD_REQUEST',
    );
  });

  // ---------------------------------------------------------------- BadgeService change log

  it('service: ingest appends a post event for each newly stored post, and only those', async () => {
    const { store } = ctx();
    const { service, clock } = manualService(store);
    const now = clock.now();
    expect(await postEvents(store)).toEqual([]);
    await service.ingestPosts([
      { author: 'a', id: 'p1', ts: now - 3_000 },
      { author: 'b', id: 'p1', ts: now - 2_000 },
    ]);
    expect(await postEvents(store)).toEqual([
      { kind: 'post', author: 'a', id: 'p1', ts: now - 3_000 },
      { kind: 'post', author: 'b', id: 'p1', ts: now - 2_000 },
    ]);
    // Duplicates (with another ts, across and within the batch) and ignored posts add nothing.
    expect(
      await service.ingestPosts([
        { author: 'a', id: 'p1', ts: now - 1_000 },
        { author: 'a', id: 'p2', ts: now - 500 },
        { author: 'a', id: 'p2', ts: now - 400 },
        { author: 'a', id: 'old', ts: now - L },
        { author: 'c', id: 'p1', ts: now },
      ]),
    ).toEqual({ accepted: 4, ignored: 1 });
    expect(await postEvents(store)).toEqual([
      { kind: 'post', author: 'a', id: 'p1', ts: now - 3_000 },
      { kind: 'post', author: 'b', id: 'p1', ts: now - 2_000 },
      { kind: 'post', author: 'a', id: 'p2', ts: now - 500 },
      { kind: 'post', author: 'c', id: 'p1', ts: now },
    ]);
    // A batch of nothing but duplicates appends nothing.
    await service.ingestPosts([{ author: 'b', id: 'p1', ts: now }]);
    const read = await store.changes.readPostEvents(LOG_START, 1000);
    expect(read.entries).toHaveLength(4);
    expect(read.gap).toBe(false);
    // Post events never go to the pool logs.
    expect(await allPoolEvents(store)).toEqual([]);
  });

  it('service: deleting a stored post appends one delete event with its ts; else none', async () => {
    const { store } = ctx();
    const { service, clock } = manualService(store);
    const ts = clock.now() - MINUTE_MS;
    await service.ingestPosts([
      { author: 'a', id: 'p', ts },
      { author: 'a', id: 'q', ts: ts + 1 },
    ]);
    clock.advance(1_000);
    await service.deletePost('a', 'p');
    const afterDelete = await postEvents(store);
    expect(afterDelete).toEqual([
      { kind: 'post', author: 'a', id: 'p', ts },
      { kind: 'post', author: 'a', id: 'q', ts: ts + 1 },
      { kind: 'delete', author: 'a', id: 'p', ts },
    ]);
    // Deleted again, never seen, or under an author with no posts: nothing removed, no event.
    await service.deletePost('a', 'p');
    await service.deletePost('a', 'never-seen');
    await service.deletePost('nobody', 'p');
    // A retried ingest of the deleted post is ignored: no event either.
    await service.ingestPosts([{ author: 'a', id: 'p', ts }]);
    expect(await postEvents(store)).toEqual(afterDelete);
    expect(await allPoolEvents(store)).toEqual([]);
  });

  it('service: every follow change that is not refused appends a follows event to the user’s pool', async () => {
    const { store } = ctx();
    const { service } = manualService(store, { rules: { followCap: 2 } });
    const follows: PoolEvent = { kind: 'follows', user: 'u' };
    const times = (n: number) => Array.from({ length: n }, () => follows);
    await service.follow('u', 'a');
    expect(await poolEvents(store, 'u')).toEqual([follows]);
    // Already followed: the event again (a retry of a follow whose event was lost); refused: none.
    await service.follow('u', 'a');
    await expectBubbleError(service.follow('u', 'u'), 'UB_ERR_SELF_FOLLOW');
    await service.follow('u', 'b');
    await expectBubbleError(service.follow('u', 'c'), 'UB_ERR_FOLLOW_CAP');
    expect(await poolEvents(store, 'u')).toEqual(times(3));
    await service.unfollow('u', 'a');
    expect(await poolEvents(store, 'u')).toEqual(times(4));
    // Not followed: nothing removed, the event all the same.
    await service.unfollow('u', 'a');
    await service.unfollow('u', 'never');
    expect(await poolEvents(store, 'u')).toEqual(times(6));
    // replace always records one, even when the set stays the same; a refused one does not.
    await service.replaceFollows('u', ['b']);
    await service.replaceFollows('u', ['c', 'd', 'c']);
    await expectBubbleError(service.replaceFollows('u', ['a', 'b', 'c']), 'UB_ERR_FOLLOW_CAP');
    expect(await poolEvents(store, 'u')).toEqual(times(8));
    // Another user's changes go to their own pool's log, under their own name.
    await service.follow('v', 'a');
    expect(await poolEvents(store, 'v')).toContainEqual({ kind: 'follows', user: 'v' });
    // Everything logged is in those pools and nowhere else.
    expect(await allPoolEvents(store)).toHaveLength(9);
    expect(await postEvents(store)).toEqual([]);
  });

  it('service: every read appends a cursor event with the cursor after the move', async () => {
    const { store } = ctx();
    const { service, clock } = manualService(store);
    const now = clock.now();
    const cursorEvents = async () =>
      (await poolEvents(store, 'u')).filter((event) => event.kind === 'cursor');
    await service.read('u', { scope: 'feed', upTo: now - 2_000 });
    // The first read is the user's first sight: a marks event tells a core to load their marks.
    expect(await poolEvents(store, 'u')).toEqual([
      { kind: 'marks', user: 'u' },
      { kind: 'cursor', user: 'u', readAt: now - 2_000 },
    ]);
    // A read behind the cursor does not move it, and still reports where it is.
    await service.read('u', { scope: 'feed', upTo: now - 5_000 });
    // upTo in the future clamps to now.
    await service.read('u', { scope: 'feed', upTo: now + HOUR_MS });
    clock.advance(1_000);
    await service.read('u', { scope: 'all' });
    await service.read('u', { scope: 'feed' });
    expect(await cursorEvents()).toEqual([
      { kind: 'cursor', user: 'u', readAt: now - 2_000 },
      { kind: 'cursor', user: 'u', readAt: now - 2_000 },
      { kind: 'cursor', user: 'u', readAt: now },
      { kind: 'cursor', user: 'u', readAt: now + 1_000 },
      { kind: 'cursor', user: 'u', readAt: now + 1_000 },
    ]);
    expect(await store.cursors.feedReadAt('u')).toBe(now + 1_000);
    // Five cursor events, the first sight's marks event and the `all` read's (every source).
    expect(await allPoolEvents(store)).toHaveLength(7);
  });

  it('service: setPresence records online once, computes the badge on arrival, then offline', async () => {
    const { store } = ctx();
    const { service, clock } = manualService(store);
    await service.follow('u', 'a');
    await service.ingestPosts([{ author: 'a', id: 'p', ts: clock.now() - MINUTE_MS }]);
    const follows: PoolEvent = { kind: 'follows', user: 'u' };
    expect(await store.badges.load('u')).toBeNull();

    await service.setPresence('u', true, MINUTE_MS);
    expect(await store.presence.isOnline('u')).toBe(true);
    expect(await poolEvents(store, 'u')).toEqual([follows, { kind: 'online', user: 'u' }]);
    const stored = await store.badges.load('u');
    expect(stored).not.toBeNull();
    expect(stored!.computedAt).toBe(clock.now());

    // A renewal while online: no event, and no new computation.
    clock.advance(1_000);
    await service.setPresence('u', true, MINUTE_MS);
    expect(await poolEvents(store, 'u')).toEqual([follows, { kind: 'online', user: 'u' }]);
    expect(await store.badges.load('u')).toEqual(stored);

    await service.setPresence('u', false, MINUTE_MS);
    expect(await store.presence.isOnline('u')).toBe(false);
    expect(await poolEvents(store, 'u')).toEqual([
      follows,
      { kind: 'online', user: 'u' },
      { kind: 'offline', user: 'u' },
    ]);
    // Offline again: nothing to record.
    await service.setPresence('u', false, MINUTE_MS);
    expect(await allPoolEvents(store)).toHaveLength(3);
    await expectBubbleError(service.setPresence('a b', true, MINUTE_MS), 'UB_ERR_BAD_ID');
  });

  // ---------------------------------------------------------------- Redis only

  it('redis: every key starts with the prefix and carries a hash tag', async ({ skip }) => {
    const { engine, store, admin, prefix } = ctx();
    if (engine !== 'redis' || !admin || !prefix || !(store instanceof RedisStore)) return skip();
    const before = new Set(await scanKeys(admin));
    const { service, clock } = manualService(store);
    await service.follow('u1', 'a');
    await service.replaceFollows('u2', ['a', 'b']);
    await service.ingestPosts([
      { author: 'a', id: 'p', ts: clock.now() },
      { author: 'b', id: 'p', ts: clock.now() },
    ]);
    await service.deletePost('b', 'p');
    await service.deletePost('c', 'never');
    await service.read('u1', { scope: 'feed' });
    await service.read('u2', { scope: 'all' });
    await service.badge('u3');
    await service.setPresence('u4', true, MINUTE_MS);
    const created = (await scanKeys(admin)).filter((key) => !before.has(key));
    expect(created.length).toBeGreaterThanOrEqual(8);
    const escaped = prefix.replace(/[.:-]/g, '\\$&');
    // {u:<user>} · {a:<author>} · {p:<pool>} · {g}, right after the prefix or after the name of
    // a lifecycle (marks: dropped for inactive users).
    const shape = new RegExp(
      `^${escaped}:(?:marks:)?\\{(?:([ua]):[^{}]+|p:(0|[1-9]\\d*)|g)\\}(?::|$)`,
    );
    const tags = new Set<string>();
    for (const key of created) {
      const match = shape.exec(key);
      expect(match, key).not.toBeNull();
      const [, userOrAuthor, pool] = match!;
      tags.add(userOrAuthor ?? (pool === undefined ? 'g' : 'p'));
      if (pool !== undefined) expect(Number(pool), key).toBeLessThan(store.pools);
    }
    // Every kind of tag is in use: user sources, posts, pool state and the post change log.
    expect([...tags].sort()).toEqual(['a', 'g', 'p', 'u']);
    expect(await scanKeys(admin, `${prefix}:*`)).toHaveLength(created.length);
    // Badge states live in the pool of their user: a field of {p:<0..pools-1>}:badges.
    const badgeKeys = created.filter((key) => key.endsWith(':badges'));
    expect(badgeKeys.sort()).toEqual(
      [...new Set(['u1', 'u2', 'u3', 'u4'].map((user) => store.keys.badgeOf(user)))].sort(),
    );
    for (const user of ['u1', 'u2', 'u3', 'u4']) {
      expect(await admin.hexists(store.keys.badgeOf(user), user)).toBe(1);
    }
    for (const user of ['u1', 'u2', 'u4']) {
      expect(created).toContain(store.keys.poolEvents(poolOf(user, store.pools)));
    }
    expect(created).toContain(store.keys.online(poolOf('u4', store.pools)));
    expect(created).toContain(store.keys.postEvents());
  });

  it('redis: two prefixes on one server do not see each other', async ({ skip }) => {
    const { engine, store, freshStore } = ctx();
    if (engine !== 'redis') return skip();
    const other = freshStore();
    await store.follows.follow('u', 'a', 10);
    await store.posts.ingest([{ author: 'a', id: 'p', ts: 10 }], 0);
    await store.cursors.advanceFeedReadAt('u', 5);
    await store.badges.save('u', { f: 1 }, 1);
    expect(await other.feedInputs('u')).toEqual({ follows: [], topics: [], readAt: null });
    expect(await countAll(other, ['a'])).toBe(0);
    expect(await other.badges.load('u')).toBeNull();
  });
});
