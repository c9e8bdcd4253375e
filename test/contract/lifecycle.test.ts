/**
 * What a gone user costs (docs/semantics.md, Lifecycle), on both engines: after the
 * inactive-user job only the user's follows, topic follows, memberships and conversation cursors remain (a
 * SCAN of every key on Redis, the memory engine's heldFor()), and with a sources endpoint not
 * even their follows (docs/semantics.md, "Where a user's sources live"); a user online through
 * presence is never dropped; a stored badge state of a user offline for the lookback expires, and the
 * returning user's badge starts a new epoch.
 */
import { DAY_MS, HOUR_MS } from '@bubble/protocol';
import { MemoryStore, RedisStore, type BubbleStore } from '@bubble/store';
import { uniquePrefix } from '@bubble/test-utils';
import type { Redis } from 'ioredis';
import { expect, it } from 'vitest';
import { describeEachEngine, manualService, scanKeys, TEST_POOLS } from '../support/engines.js';

/**
 * What the store holds for `user` alone: the names of keys tagged with the user, and
 * `key#user` for every hash field, set member and sorted-set member named after them (streams,
 * the change logs, are trimmed on their own and left out).
 */
async function redisHeldFor(admin: Redis, store: RedisStore, user: string): Promise<string[]> {
  const held: string[] = [];
  for (const key of await scanKeys(admin, store.keys.all())) {
    if (key.includes(`{u:${user}}`)) {
      held.push(key);
      continue;
    }
    const type = await admin.type(key);
    const has =
      type === 'hash'
        ? (await admin.hexists(key, user)) === 1
        : type === 'zset'
          ? (await admin.zscore(key, user)) !== null
          : type === 'set'
            ? (await admin.sismember(key, user)) === 1
            : false;
    if (has) held.push(`${key}#${user}`);
  }
  return held.sort();
}

async function heldFor(store: BubbleStore, admin: Redis | undefined, user: string) {
  if (store instanceof MemoryStore) return store.heldFor(user).sort();
  return redisHeldFor(admin!, store as RedisStore, user);
}

/**
 * What heldFor() may still list for a gone user member of `conversation`: their follows too
 * unless `onDemand`.
 */
function keptFor(
  store: BubbleStore,
  user: string,
  conversation: string,
  onDemand = false,
): string[] {
  if (store instanceof MemoryStore) {
    return onDemand ? ['memberships'] : ['follows', 'memberships', 'topics'];
  }
  const { keys } = store as RedisStore;
  // The activity index orders the memberships kept: the conversation list of a returning user.
  return [
    ...(onDemand ? [] : [keys.follows(user), keys.topics(user)]),
    keys.userConversations(user),
    keys.userActivity(user),
    keys.userActivitySeqs(user),
    `${keys.conversationMembers(conversation)}#${user}`,
  ].sort();
}

describeEachEngine('lifecycle: what a gone user costs', (ctx) => {
  it('after the inactive job without a sources endpoint a gone user keeps only follows, topic follows, memberships and conversation cursors; the next visit starts afresh', async () => {
    const { store, admin } = ctx();
    // The store's own clock (presence, the offline index) runs in real time: start there.
    const { service, clock } = manualService(store, { start: Date.now() });
    const ts = () => clock.now();
    await service.follow('gone', 'a1');
    await service.followTopic('gone', 'cats');
    await service.replaceMembers('c1', ['gone', 'peer']);
    await service.ingestPosts([{ author: 'a1', id: 'p1', ts: ts() }]);
    await service.ingestMessages('c1', [
      { seq: 1, from: 'peer', ts: ts() },
      { seq: 2, from: 'peer', ts: ts() },
    ]);
    await service.publishNotice(1);
    await service.markReddot('r1');
    await service.setPresence('gone', true, 60_000);
    const first = await service.badge('gone', { seen: true });
    expect(first).toMatchObject({ feed: 1, notices: 0, conversations: { c1: 2 }, reddots: ['r1'] });
    await service.publishNotice(2);
    await service.read('gone', { scope: 'feed' });
    await service.read('gone', { scope: 'notices' });
    await service.read('gone', { scope: 'reddot', name: 'r1' });
    await service.read('gone', { scope: 'conversation', id: 'c1', seq: 1 });
    await service.setPresence('gone', false, 60_000);
    // Seen as long ago, but online through presence when the job runs: kept.
    await service.setPresence('stays', true, 3_600_000);
    const staying = await service.badge('stays', { seen: true });

    clock.advance(31 * DAY_MS + 2 * HOUR_MS);
    expect(await service.dropInactiveUsers(100)).toEqual(['gone']);
    await service.expireOfflineBadges(100);
    expect(await heldFor(store, admin, 'gone')).toEqual(keptFor(store, 'gone', 'c1'));
    expect(await store.marks.state('stays')).toMatchObject({ seen: 2 });
    expect((await store.badges.load('stays'))?.epoch).toBe(staying.epoch);

    // Back: a new epoch, counted as for a user whose cursors are unset (the notice cursor at
    // the highest id, the red dot unclicked); the conversation cursor was kept.
    await service.publishNotice(3);
    const back = await service.badge('gone', { seen: true });
    expect(back.epoch).not.toBe(first.epoch);
    expect(back).toMatchObject({ feed: 0, notices: 0, conversations: { c1: 1 }, reddots: ['r1'] });
    await service.ingestPosts([{ author: 'a1', id: 'p2', ts: ts() }]);
    await service.publishNotice(4);
    expect(await service.badge('gone', { seen: true })).toMatchObject({ feed: 1, notices: 1 });
  });

  it('a stored badge state of a user offline for the lookback expires; the next computation starts a new epoch', async () => {
    const { store } = ctx();
    const { service, clock } = manualService(store, { start: Date.now() });
    await service.follow('away', 'a1');
    await service.setPresence('away', true, 60_000);
    const before = await service.badge('away', { seen: true });
    await service.read('away', { scope: 'feed' });
    await service.setPresence('away', false, 60_000);
    // Polled while offline: the state ages from that computation.
    await service.setPresence('poller', true, 60_000);
    await service.setPresence('poller', false, 60_000);
    clock.advance(5 * DAY_MS);
    const polled = await service.badge('poller', { seen: true });
    // Online all along: never expires.
    await service.setPresence('online', true, 3_600_000);
    const online = await service.badge('online', { seen: true });

    clock.advance(3 * DAY_MS);
    expect(await service.expireOfflineBadges(100)).toBe(1);
    expect(await store.badges.load('away')).toBeNull();
    expect((await store.badges.load('poller'))?.epoch).toBe(polled.epoch);
    expect((await store.badges.load('online'))?.epoch).toBe(online.epoch);
    // The cursors are kept (only the inactive job drops them).
    expect(await store.cursors.feedReadAt('away')).not.toBeNull();
    const back = await service.badge('away', { seen: true });
    expect(back.epoch).not.toBe(before.epoch);
    expect(back.version).toBe(1);

    clock.advance(5 * DAY_MS);
    expect(await service.expireOfflineBadges(100)).toBe(1);
    expect(await store.badges.load('poller')).toBeNull();
    expect((await store.badges.load('online'))?.epoch).toBe(online.epoch);
  });

  it('with a sources endpoint the inactive job drops follows, topic follows and a fetch in flight too; an install gives them back', async () => {
    const { engine, admin, redisUrl } = ctx();
    const store =
      engine === 'memory'
        ? new MemoryStore({ pools: TEST_POOLS, sourcesOnDemand: true })
        : new RedisStore({
            url: redisUrl!,
            keyPrefix: uniquePrefix(),
            pools: TEST_POOLS,
            sourcesOnDemand: true,
          });
    try {
      const { service, clock } = manualService(store, { start: Date.now() });
      const caps = { follows: 10, topics: 10 };
      await store.sources.install(
        [{ user: 'gone', answer: { follows: ['a1', 'a2'], topics: ['cats'] } }],
        caps,
      );
      await service.replaceMembers('c1', ['gone', 'peer']);
      await service.badge('gone', { seen: true });
      await service.read('gone', { scope: 'feed' });
      // Seen, not held, a fetch of their sources in flight (an hour's ttl) holding a change.
      await service.badge('fetching', { seen: true });
      await store.sources.beginFetch(['fetching'], 3_600_000);
      expect(await store.follows.follow('fetching', 'a1', 10)).toBe('recorded');

      clock.advance(31 * DAY_MS + 2 * HOUR_MS);
      expect((await service.dropInactiveUsers(100)).sort()).toEqual(['fetching', 'gone']);
      await service.expireOfflineBadges(100);
      expect(await heldFor(store, admin, 'gone')).toEqual(keptFor(store, 'gone', 'c1', true));
      expect(await heldFor(store, admin, 'fetching')).toEqual([]);
      expect(await store.sources.held(['gone', 'fetching'])).toEqual([false, false]);
      expect(await store.follows.follow('gone', 'a3', 10)).toBe('not-held');
      expect(await store.follows.follow('fetching', 'a2', 10)).toBe('not-held');

      // Back: the platform's answer is installed again, the feed cursor where none is left.
      const [back] = await store.sources.install(
        [{ user: 'gone', answer: { follows: ['a2'], topics: [], readAt: 5 } }],
        caps,
      );
      expect(back).toEqual({ follows: ['a2'], topics: [], readAt: 5, held: true });
    } finally {
      await store.close();
    }
  });
});
