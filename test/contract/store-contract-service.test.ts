/**
 * The feed-bubble rules of BadgeService (docs/semantics.md, "Feed bubble") on top of each
 * engine. Both engines must pass the very same assertions.
 */
import { DAY_MS, HOUR_MS, MINUTE_MS } from '@bubble/protocol';
import type { Post } from '@bubble/store';
import { expect, it } from 'vitest';
import { describeEachEngine, manualService } from '../support/engines.js';
import { L, codeOf, countAll, expectBubbleError, seededRandom } from '../support/store-contract.js';

describeEachEngine('BubbleStore contract: BadgeService', (ctx) => {
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
});
