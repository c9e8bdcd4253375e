/**
 * The BubbleStore contract (packages/store/src/bubble-store/bubble-store.ts), run against both engines: posts,
 * their ids, tombstones, counts and windows. Both engines must pass the very same assertions.
 * The other parts: test/contract/store-contract-*.
 */
import { DAY_MS, HOUR_MS, MINUTE_MS } from '@bubble/protocol';
import { RedisStore, type BubbleStore, type Post } from '@bubble/store';
import { expect, it } from 'vitest';
import { describeEachEngine } from '../support/engines.js';
import { L, countAll, seededRandom } from '../support/store-contract.js';

describeEachEngine('BubbleStore contract: posts', (ctx) => {
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
    const posts = await ingestRandomPosts(store, seededRandom(42), 5);
    const authors = everyThirdSkipped();
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
    const posts = await ingestRandomPosts(store, seededRandom(4242), 6);
    // Every third author is skipped, and some who never posted are asked for.
    const authors = [...everyThirdSkipped(), 'ghost1', 'ghost2'];
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
});

const AUTHORS = 300;

/** Fewer than `perAuthor` posts (at random) for each author a0, a1, …, at ts 1..1000, ingested. */
async function ingestRandomPosts(
  store: BubbleStore,
  rand: (n: number) => number,
  perAuthor: number,
): Promise<Post[]> {
  const posts: Post[] = [];
  for (let a = 0; a < AUTHORS; a++) {
    const n = rand(perAuthor);
    for (let i = 0; i < n; i++) posts.push({ author: `a${a}`, id: `p${i}`, ts: 1 + rand(1_000) });
  }
  for (let i = 0; i < posts.length; i += 500) await store.posts.ingest(posts.slice(i, i + 500), 0);
  return posts;
}

/** The authors of ingestRandomPosts but every third. */
function everyThirdSkipped(): string[] {
  return Array.from({ length: AUTHORS }, (_, a) => `a${a}`).filter((_, a) => a % 3 !== 0);
}
