/**
 * The store logs the writes the cores must see in the step that makes them (issue 16, item 2),
 * on both engines: a post, a delete, a notice, a red dot and a membership change are in their
 * change log as soon as the write is, with no second call, and a log read issued right after the
 * write (not awaited in between) already sees the event: one script on Redis, one synchronous
 * step in memory. A write that changes nothing logs nothing; a membership change logs each user
 * it added or removed once, and leaves nothing owed.
 */
import { poolOf } from '@bubble/protocol';
import { LOG_START, RedisStore, type BubbleStore, type PoolEvent } from '@bubble/store';
import { expect, it } from 'vitest';
import { describeEachEngine, T0 } from '../support/engines.js';

async function postEvents(store: BubbleStore) {
  return (await store.changes.readPostEvents(LOG_START, 1000)).entries.map((e) => e.event);
}

async function sharedEvents(store: BubbleStore) {
  return (await store.changes.readSharedEvents(LOG_START, 1000)).entries.map((e) => e.event);
}

async function marksOf(store: BubbleStore, users: readonly string[]): Promise<PoolEvent[]> {
  const pools = [...new Set(users.map((user) => poolOf(user, store.pools)))];
  const reads = await store.changes.readPoolEvents(
    pools.map((pool) => ({ pool, after: LOG_START })),
    1000,
  );
  return [...reads.values()]
    .flatMap((read) => read.entries.map((entry) => entry.event))
    .filter((event) => users.includes(event.user));
}

describeEachEngine('writes logged in the step that makes them', (ctx) => {
  it('posts and deletes: the event is in the post log with the write', async () => {
    const { store } = ctx();
    const stored = store.posts.ingest(
      [
        { author: 'a', id: 'p1', ts: T0 },
        { author: 'b', id: 'p2', ts: T0 + 1 },
        { author: 'a', id: 'old', ts: 5 },
      ],
      100,
    );
    const read = store.changes.readPostEvents(LOG_START, 10);
    await stored;
    expect((await read).entries.map((e) => e.event)).toEqual(
      expect.arrayContaining([
        { kind: 'post', author: 'a', id: 'p1', ts: T0 },
        { kind: 'post', author: 'b', id: 'p2', ts: T0 + 1 },
      ]),
    );
    expect(await postEvents(store)).toHaveLength(2);

    // A duplicate or an unknown post logs nothing more.
    await store.posts.ingest([{ author: 'a', id: 'p1', ts: T0 }], 100);
    expect(await store.posts.remove('a', 'ghost', T0, 100)).toBeNull();
    expect(await postEvents(store)).toHaveLength(2);

    const removed = store.posts.remove('a', 'p1', T0 + 10, 100);
    const after = store.changes.readPostEvents(LOG_START, 10);
    expect(await removed).toBe(T0);
    expect((await after).entries.at(-1)?.event).toEqual({
      kind: 'delete',
      author: 'a',
      id: 'p1',
      ts: T0,
    });
  });

  it('notices and red dots: the shared event is in the shared log with the write', async () => {
    const { store } = ctx();
    const published = store.notices.publish(7, T0);
    const read = store.changes.readSharedEvents(LOG_START, 10);
    expect(await published).toBe(true);
    expect((await read).entries.map((e) => e.event)).toEqual([
      { kind: 'notice', id: 7, live: true },
    ]);
    expect(await store.notices.publish(7, T0)).toBe(false);
    expect(await store.notices.withdraw(7)).toBe(true);
    expect(await store.notices.withdraw(7)).toBe(false);
    await store.reddots.mark('shop', T0);
    expect(await store.reddots.clear('shop')).toBe(true);
    expect(await store.reddots.clear('shop')).toBe(false);
    expect(await sharedEvents(store)).toEqual([
      { kind: 'notice', id: 7, live: true },
      { kind: 'notice', id: 7, live: false },
      { kind: 'reddot', name: 'shop', ts: T0 },
      { kind: 'reddot', name: 'shop', ts: null },
    ]);
  });

  it('memberships: one marks event per user added or removed, nothing left owed', async () => {
    const { store, admin } = ctx();
    const c = store.conversations;
    const marks = (user: string): PoolEvent => ({ kind: 'marks', user });
    await c.replaceMembers('cv', ['u1', 'u2']);
    expect(await marksOf(store, ['u1', 'u2', 'u3'])).toEqual(
      expect.arrayContaining([marks('u1'), marks('u2')]),
    );
    await c.addMembers('cv', ['u2', 'u3']);
    await c.replaceMembers('cv', ['u2', 'u3']); // u1 leaves
    expect(await c.removeMember('cv', 'u3')).toBe(true);
    expect(await c.removeMember('cv', 'u3')).toBe(false);
    expect(await c.dissolve('cv')).toEqual(['u2']);
    expect(await c.dissolve('cv')).toEqual([]);
    const events = await marksOf(store, ['u1', 'u2', 'u3']);
    const count = (user: string) => events.filter((event) => event.user === user).length;
    // u1: joined, left; u2: joined, dissolved; u3: joined, removed.
    expect([count('u1'), count('u2'), count('u3')]).toEqual([2, 2, 2]);
    if (store instanceof RedisStore) {
      expect(await admin!.exists(store.keys.conversationUnlogged('cv'))).toBe(0);
      expect(await admin!.exists(store.keys.userConversations('u2'))).toBe(0);
    }
  });
});
