/**
 * The feed-bubble rules of BadgeService (docs/semantics.md, "Feed bubble") on top of each
 * engine: the change log it appends, and the Redis engine's keys. Both engines must pass the
 * very same assertions.
 */
import { HOUR_MS, MINUTE_MS, poolOf } from '@bubble/protocol';
import { LOG_START, RedisStore, type PoolEvent } from '@bubble/store';
import { expect, it } from 'vitest';
import { describeEachEngine, manualService, scanKeys } from '../support/engines.js';
import {
  L,
  allPoolEvents,
  countAll,
  expectBubbleError,
  poolEvents,
  postEvents,
} from '../support/store-contract.js';

describeEachEngine('BubbleStore contract: BadgeService change log, Redis keys', (ctx) => {
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
    expect(await other.feedInputs('u')).toEqual({
      follows: [],
      topics: [],
      readAt: null,
      held: true,
    });
    expect(await countAll(other, ['a'])).toBe(0);
    expect(await other.badges.load('u')).toBeNull();
  });
});
