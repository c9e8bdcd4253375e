/**
 * The batched forward-only setters behind `POST /v1/cursors` (packages/store/src: cursors,
 * marks, conversations): ReadCursors.advanceFeedReadAtOfMany, UserMarks.advanceSeenOfMany and
 * Conversations.advanceReadSeqs, run against both engines with the very same assertions. Each
 * must move a cursor exactly as its one-user counterpart (a read) does.
 */
import { LOG_START } from '@bubble/store';
import { expect, it } from 'vitest';
import { T0, TEST_POOLS, describeEachEngine } from '../support/engines.js';
import { JOB_NOW, highestOf, membershipOf, msg } from './extras-contract-support.js';

const BIG = Number.MAX_SAFE_INTEGER;

describeEachEngine('cursor migration contract', (ctx) => {
  it('feed: each cursor moves forward only, in input order, a user named twice in turn', async () => {
    const { cursors } = ctx().store;
    await cursors.advanceFeedReadAt('ahead', T0 + 500);
    const after = await cursors.advanceFeedReadAtOfMany([
      { user: 'new', to: T0 },
      { user: 'ahead', to: T0 + 100 },
      { user: 'twice', to: T0 + 20 },
      { user: 'twice', to: T0 + 10 },
      { user: 'twice', to: T0 + 30 },
      { user: 'big', to: BIG },
      { user: 'zero', to: 0 },
    ]);
    expect(after).toEqual([T0, T0 + 500, T0 + 20, T0 + 20, T0 + 30, BIG, 0]);
    expect(await cursors.feedReadAt('new')).toBe(T0);
    expect(await cursors.feedReadAt('ahead')).toBe(T0 + 500);
    expect(await cursors.feedReadAt('twice')).toBe(T0 + 30);
    expect(await cursors.feedReadAt('big')).toBe(BIG);
    expect(await cursors.feedReadAt('zero')).toBe(0);
    expect(await cursors.feedReadAt('untouched')).toBeNull();
    expect(await cursors.advanceFeedReadAtOfMany([])).toEqual([]);
  });

  it('feed: a batch larger than one chunk answers every move in order', async () => {
    const { cursors } = ctx().store;
    const moves = Array.from({ length: 2500 }, (_, i) => ({ user: `u${i % 1200}`, to: T0 + i }));
    const after = await cursors.advanceFeedReadAtOfMany(moves);
    expect(after).toEqual(moves.map(({ to }) => to));
    expect(await cursors.feedReadAt('u0')).toBe(T0 + 2400);
    expect(await cursors.feedReadAt('u1199')).toBe(T0 + 2399);
    expect(await cursors.feedReadAt('u1200')).toBeNull();
  });

  it('notices: each cursor moves forward only, and the move is no sight of the user', async () => {
    const { store } = ctx();
    const { marks } = store;
    await store.notices.publish(40, T0);
    await marks.see('seen', T0, () => store.notices.highestId());
    expect((await marks.state('seen')).seen).toBe(40);
    const after = await marks.advanceSeenOfMany([
      { user: 'seen', to: 30 },
      { user: 'seen', to: 45 },
      { user: 'fresh', to: 7 },
      { user: 'fresh', to: 3 },
      { user: 'big', to: BIG },
    ]);
    expect(after).toEqual([40, 45, 7, 7, BIG]);
    expect((await marks.state('seen')).seen).toBe(45);
    expect((await marks.state('fresh')).seen).toBe(7);
    expect((await marks.state('big')).seen).toBe(BIG);
    expect(await marks.advanceSeenOfMany([])).toEqual([]);

    // Not a sight: no event in the user's pool log, no entry in the last-seen index (the
    // inactive job never finds a user who was never seen), and their first sight keeps the
    // migrated cursor instead of starting it at the highest id.
    const reads = await store.changes.readPoolEvents(
      Array.from({ length: TEST_POOLS }, (_, pool) => ({ pool, after: LOG_START })),
      1000,
    );
    const logged = [...reads.values()].flatMap((read) => read.entries.map((e) => e.event.user));
    expect(logged).not.toContain('fresh');
    expect(await marks.dropInactive(JOB_NOW, 100, JOB_NOW)).toEqual(['seen']);
    const probe = highestOf(store);
    expect(await marks.see('fresh', T0, probe.read)).toEqual({ seen: 7, first: false });
    expect(probe.calls).toBe(0);
  });

  it('conversations: members move forward only, clamped to maxSeq, mute kept; others null', async () => {
    const { store } = ctx();
    const c = store.conversations;
    await c.replaceMembers('c1', ['a', 'm', 'behind']);
    await c.ingest('c1', [msg(1, 'x'), msg(2, 'x'), msg(3, 'x'), msg(9, 'x')]);
    await c.setMuted('c1', 'm', true);
    await c.read('c1', 'behind', 5);
    await c.replaceMembers('c2', ['a']);
    await c.ingest('c2', [msg(BIG - 1, 'x')]);
    await c.replaceMembers('empty', ['a']);

    const after = await c.advanceReadSeqs([
      { conversation: 'c1', user: 'a', seq: 4 },
      { conversation: 'c1', user: 'm', seq: 100 },
      { conversation: 'c1', user: 'behind', seq: 2 },
      { conversation: 'c1', user: 'stranger', seq: 3 },
      { conversation: 'c2', user: 'a', seq: BIG },
      { conversation: 'never', user: 'a', seq: 1 },
      { conversation: 'empty', user: 'a', seq: 5 },
      { conversation: 'c1', user: 'a', seq: 2 },
      { conversation: 'c1', user: 'a', seq: 6 },
    ]);
    expect(after).toEqual([4, 9, 5, null, BIG - 1, null, 0, 4, 6]);
    expect(await membershipOf(store, 'a', 'c1')).toMatchObject({ maxSeq: 9, readSeq: 6 });
    expect(await membershipOf(store, 'm', 'c1')).toMatchObject({ readSeq: 9, muted: true });
    expect(await membershipOf(store, 'behind', 'c1')).toMatchObject({ readSeq: 5 });
    expect(await membershipOf(store, 'a', 'c2')).toMatchObject({ readSeq: BIG - 1 });
    expect(await membershipOf(store, 'a', 'empty')).toMatchObject({ readSeq: 0 });
    expect(await c.memberships('stranger')).toEqual([]);
    expect(await c.members('never')).toBeNull();
    expect(await c.advanceReadSeqs([])).toEqual([]);
  });

  it('conversations: a batch over many conversations (more than one chunk) answers in order', async () => {
    const { store } = ctx();
    const c = store.conversations;
    const ids = Array.from({ length: 700 }, (_, i) => `conv-${i}`);
    for (const id of ids) {
      await c.replaceMembers(id, ['a', 'b']);
      await c.ingest(id, [msg(10, 'x')]);
    }
    const moves = ids.flatMap((conversation, i) => [
      { conversation, user: 'a', seq: (i % 12) + 1 },
      { conversation, user: 'nobody', seq: 3 },
      { conversation, user: 'b', seq: 20 },
    ]);
    const after = await c.advanceReadSeqs(moves);
    expect(after).toEqual(ids.flatMap((_, i) => [Math.min((i % 12) + 1, 10), null, 10]));
    expect(await membershipOf(store, 'a', 'conv-11')).toMatchObject({ readSeq: 10 });
    expect(await membershipOf(store, 'a', 'conv-12')).toMatchObject({ readSeq: 1 });
  });
});
