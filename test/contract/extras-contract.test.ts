/**
 * The contract of the sources beside the feed (packages/store/src: notices, red-dots, marks, conversations;
 * docs/semantics.md "System notices", "Red dots", "Conversations"): NoticeBoard, RedDots,
 * UserMarks and Conversations, run against both engines with the very same assertions. A last
 * suite drives random operation sequences through a memory store and a Redis store side by side
 * and requires identical answers after every step.
 */
import { DAY_MS, HOUR_MS, MINUTE_MS } from '@bubble/protocol';
import {
  MemoryStore,
  type BubbleStore,
  type ConversationMessage,
  type Membership,
  type MembershipChange,
} from '@bubble/store';
import fc from 'fast-check';
import { expect, it } from 'vitest';
import { T0, describeEachEngine, manualService } from '../support/engines.js';

/** The inactive job's now: only users online through presence are seen at it. */
const JOB_NOW = T0 + 1000 * DAY_MS;

const sorted = (values: readonly string[]): string[] => [...values].sort();

function change(c: MembershipChange): MembershipChange {
  return { added: sorted(c.added), removed: sorted(c.removed) };
}

function byConversation<T extends { conversation: string }>(list: readonly T[]): T[] {
  return [...list].sort((a, b) => (a.conversation < b.conversation ? -1 : 1));
}

async function membershipOf(
  store: BubbleStore,
  user: string,
  conversation: string,
): Promise<Membership | undefined> {
  return (await store.conversations.memberships(user)).find((m) => m.conversation === conversation);
}

const msg = (
  seq: number,
  from: string,
  ts = T0 + seq,
  preview?: Record<string, unknown>,
): ConversationMessage => ({ seq, from, ts, preview });

/** A highestNoticeId callback that counts its calls. */
function highestOf(store: BubbleStore): { calls: number; read: () => Promise<number> } {
  const probe = {
    calls: 0,
    read: async () => {
      probe.calls++;
      return store.notices.highestId();
    },
  };
  return probe;
}

describeEachEngine('extras contract', (ctx) => {
  // ------------------------------------------------------------------------------- notices

  it('notices: publish once, withdraw, highest id counts withdrawn ones, live ids ascending', async () => {
    const { notices } = ctx().store;
    expect(await notices.highestId()).toBe(0);
    expect(await notices.liveIds()).toEqual([]);
    expect(await notices.countAfter(0)).toBe(0);

    expect(await notices.publish(10, T0)).toBe(true);
    expect(await notices.publish(9, T0)).toBe(true);
    expect(await notices.publish(100, T0)).toBe(true);
    expect(await notices.publish(10, T0 + 1)).toBe(false); // live already
    expect(await notices.liveIds()).toEqual([9, 10, 100]); // numeric, not lexicographic
    expect(await notices.highestId()).toBe(100);
    expect(await notices.countAfter(0)).toBe(3);
    expect(await notices.countAfter(9)).toBe(2);
    expect(await notices.countAfter(99)).toBe(1);
    expect(await notices.countAfter(100)).toBe(0);

    expect(await notices.withdraw(100)).toBe(true);
    expect(await notices.withdraw(100)).toBe(false);
    expect(await notices.withdraw(55)).toBe(false);
    expect(await notices.liveIds()).toEqual([9, 10]);
    expect(await notices.highestId()).toBe(100); // withdrawn ones included
    expect(await notices.countAfter(9)).toBe(1);

    // A withdrawn id may be published again; the highest never goes down.
    expect(await notices.publish(100, T0)).toBe(true);
    expect(await notices.publish(3, T0)).toBe(true);
    expect(await notices.liveIds()).toEqual([3, 9, 10, 100]);
    expect(await notices.highestId()).toBe(100);

    const big = Number.MAX_SAFE_INTEGER;
    expect(await notices.publish(big, T0)).toBe(true);
    expect(await notices.highestId()).toBe(big);
    expect(await notices.countAfter(big - 1)).toBe(1);
    expect(await notices.liveIds()).toEqual([3, 9, 10, 100, big]);
  });

  // ------------------------------------------------------------------------------ red dots

  it('red dots: mark sets G(name), a later mark overwrites, clear reports what it removed', async () => {
    const { reddots } = ctx().store;
    expect(await reddots.all()).toEqual({});
    await reddots.mark('shop', T0);
    await reddots.mark('wallet', T0 + 5);
    await reddots.mark('shop', T0 + 7);
    expect(await reddots.all()).toEqual({ shop: T0 + 7, wallet: T0 + 5 });
    expect(await reddots.clear('shop')).toBe(true);
    expect(await reddots.clear('shop')).toBe(false);
    expect(await reddots.clear('never')).toBe(false);
    expect(await reddots.all()).toEqual({ wallet: T0 + 5 });
  });

  // -------------------------------------------------------------------------------- marks

  it('marks: the first sight sets seen to the highest id ever published; later sights keep it', async () => {
    const { store } = ctx();
    const { marks, notices } = store;
    expect(await marks.state('u')).toEqual({ seen: null, clicks: {} });

    await notices.publish(3, T0);
    await notices.publish(7, T0);
    await notices.withdraw(7); // withdrawn, but still the highest ever published
    const probe = highestOf(store);
    expect(await marks.see('u', T0, probe.read)).toEqual({ seen: 7, first: true });
    expect(probe.calls).toBe(1);
    expect(await marks.state('u')).toEqual({ seen: 7, clicks: {} });

    await notices.publish(9, T0);
    expect(await marks.see('u', T0 + 2 * HOUR_MS, probe.read)).toEqual({ seen: 7, first: false }); // kept
    expect(await marks.see('u', T0 + 4 * HOUR_MS, probe.read)).toEqual({ seen: 7, first: false });
    expect(probe.calls).toBe(1); // asked only while the cursor was unset
    expect(await notices.countAfter(7)).toBe(1);

    // A brand-new user before any notice starts at 0.
    const fresh = ctx().freshStore();
    expect(await fresh.marks.see('v', T0, () => fresh.notices.highestId())).toEqual({
      seen: 0,
      first: true,
    });
    expect(await fresh.marks.state('v')).toEqual({ seen: 0, clicks: {} });
  });

  it('marks: advanceSeen only moves forward; click records per red dot', async () => {
    const { marks } = ctx().store;
    await marks.see('u', T0, async () => 5);
    expect(await marks.advanceSeen('u', 3)).toBe(5);
    expect(await marks.advanceSeen('u', 5)).toBe(5);
    expect(await marks.advanceSeen('u', 12)).toBe(12);
    expect(await marks.advanceSeen('u', 11)).toBe(12);
    expect((await marks.state('u')).seen).toBe(12);
    expect(await marks.see('u', T0 + 2 * HOUR_MS, async () => 99)).toEqual({
      seen: 12,
      first: false,
    });

    await marks.click('u', [], T0); // nothing
    await marks.click('u', ['shop', 'wallet'], T0 + 1);
    await marks.click('u', ['shop'], T0 + 2);
    expect(await marks.state('u')).toEqual({ seen: 12, clicks: { shop: T0 + 2, wallet: T0 + 1 } });
    // Another user's marks are their own.
    await marks.click('w', ['shop'], T0 + 3);
    expect(await marks.state('w')).toEqual({ seen: null, clicks: { shop: T0 + 3 } });
    expect(await marks.state('u')).toEqual({ seen: 12, clicks: { shop: T0 + 2, wallet: T0 + 1 } });
  });

  it('marks: dropInactive drops users last seen at/before the cutoff, oldest first, at most limit', async () => {
    const { marks } = ctx().store;
    const see = (user: string, at: number) => marks.see(user, at, async () => 1);
    await see('u-c', T0);
    await see('u-b', T0 + 2 * HOUR_MS); // b before a: a tie goes by name, not by first sight
    await see('u-a', T0 + 2 * HOUR_MS);
    await see('u-d', T0 + 5 * HOUR_MS);
    await see('u-e', T0);
    await see('u-e', T0 + 4 * HOUR_MS); // seen again: kept
    await marks.click('u-a', ['shop'], T0 + 2 * HOUR_MS);
    // Clicked but never seen: not in the lifecycle, never dropped.
    await marks.click('u-never', ['shop'], T0);

    const cutoff = T0 + 2 * HOUR_MS; // at the cutoff counts as inactive
    expect(await marks.dropInactive(T0 - 1, 10, JOB_NOW)).toEqual([]);
    expect(await marks.dropInactive(cutoff, 0, JOB_NOW)).toEqual([]);
    expect(await marks.dropInactive(cutoff, 2, JOB_NOW)).toEqual(['u-c', 'u-a']);
    expect(await marks.dropInactive(cutoff, 10, JOB_NOW)).toEqual(['u-b']);
    expect(await marks.dropInactive(cutoff, 10, JOB_NOW)).toEqual([]);

    expect(await marks.state('u-a')).toEqual({ seen: null, clicks: {} });
    expect(await marks.state('u-e')).toEqual({ seen: 1, clicks: {} });
    expect(await marks.state('u-d')).toEqual({ seen: 1, clicks: {} });
    expect(await marks.state('u-never')).toEqual({ seen: null, clicks: { shop: T0 } });
    expect(await marks.dropInactive(T0 + 10 * HOUR_MS, 10, JOB_NOW)).toEqual(['u-e', 'u-d']);
    expect(await marks.dropInactive(T0 + 100 * HOUR_MS, 10, JOB_NOW)).toEqual([]);
  });

  it('marks: after a drop the next sight starts afresh at the highest id', async () => {
    const { store } = ctx();
    const { marks, notices } = store;
    await notices.publish(4, T0);
    await marks.see('u', T0, () => notices.highestId());
    await marks.advanceSeen('u', 2); // no move
    await marks.click('u', ['shop'], T0);
    await notices.publish(8, T0);
    expect((await marks.state('u')).seen).toBe(4);

    expect(await marks.dropInactive(T0 + 1, 10, JOB_NOW)).toEqual(['u']);
    expect(await marks.state('u')).toEqual({ seen: null, clicks: {} });

    const later = T0 + 31 * 24 * HOUR_MS;
    const probe = highestOf(store);
    // Fresh, as a new user: 0 unread notices.
    expect(await marks.see('u', later, probe.read)).toEqual({ seen: 8, first: true });
    expect(probe.calls).toBe(1);
    expect(await marks.state('u')).toEqual({ seen: 8, clicks: {} });
    // The new sight is recorded: a cutoff before it keeps the user, one after it drops them.
    expect(await marks.dropInactive(later - 1, 10, JOB_NOW)).toEqual([]);
    expect(await marks.dropInactive(later, 10, JOB_NOW)).toEqual(['u']);
  });

  it('BadgeService.dropInactiveUsers drops nobody seen within the last inactiveDays', async () => {
    const { store } = ctx();
    const { service, clock } = manualService(store, { rules: { inactiveDays: 30 } });
    await service.publishNotice(3);
    await service.badge('early', { seen: true });
    await service.badge('back', { seen: true });
    clock.advance(59 * MINUTE_MS);
    // Seen again within the hour the store records a sight in: last seen at T0 + 59 min.
    await service.badge('back', { seen: true });
    clock.set(T0 + 30 * DAY_MS + MINUTE_MS);
    // back was seen 29 days 23 h 2 min ago: kept (early, unseen for 30 days and a minute, may go).
    const first = await service.dropInactiveUsers(10);
    expect(first).not.toContain('back');
    expect(await store.marks.state('back')).toEqual({ seen: 3, clicks: {} });
    // An hour (the stores' sight resolution) later, both are gone.
    clock.set(T0 + 30 * DAY_MS + HOUR_MS);
    expect(sorted([...first, ...(await service.dropInactiveUsers(10))])).toEqual(['back', 'early']);
    expect(await store.marks.state('back')).toEqual({ seen: null, clicks: {} });
    expect(await store.marks.state('early')).toEqual({ seen: null, clicks: {} });
    // Platform calls never see a user, so never start a lifecycle.
    await service.badge('platform-only');
    expect(await service.dropInactiveUsers(10)).toEqual([]);
    expect(await store.marks.state('platform-only')).toEqual({ seen: null, clicks: {} });
  });

  // ------------------------------------------------------------------------- conversations

  it('conversations: replace/add/remove/dissolve answer who was added and removed', async () => {
    const { store } = ctx();
    const c = store.conversations;
    expect(await c.members('c1')).toBeNull();

    expect(change(await c.replaceMembers('c1', ['a', 'b', 'c']))).toEqual({
      added: ['a', 'b', 'c'],
      removed: [],
    });
    expect(change(await c.replaceMembers('c1', ['b', 'c', 'd', 'd']))).toEqual({
      added: ['d'],
      removed: ['a'],
    });
    expect(change(await c.addMembers('c1', ['c', 'e']))).toEqual({ added: ['e'], removed: [] });
    expect(change(await c.addMembers('c1', ['e']))).toEqual({ added: [], removed: [] });
    expect(sorted((await c.members('c1'))!)).toEqual(['b', 'c', 'd', 'e']);
    expect(await c.memberships('a')).toEqual([]);

    expect(await c.removeMember('c1', 'd')).toBe(true);
    expect(await c.removeMember('c1', 'd')).toBe(false);
    expect(await c.removeMember('c1', 'zz')).toBe(false);
    expect(await c.removeMember('nope', 'b')).toBe(false);
    expect(sorted((await c.members('c1'))!)).toEqual(['b', 'c', 'e']);
    expect(await c.memberships('d')).toEqual([]);

    // An empty conversation exists; a replace with nobody removes everyone.
    expect(change(await c.replaceMembers('c2', []))).toEqual({ added: [], removed: [] });
    expect(await c.members('c2')).toEqual([]);
    expect(await c.ingest('c2', [msg(1, 'x')])).toEqual({ maxSeq: 1, senders: {} });

    expect(sorted(await c.dissolve('c1'))).toEqual(['b', 'c', 'e']);
    expect(await c.dissolve('c1')).toEqual([]);
    expect(await c.dissolve('never')).toEqual([]);
    expect(await c.members('c1')).toBeNull();
    for (const user of ['b', 'c', 'e']) expect(await c.memberships(user)).toEqual([]);

    // Dissolved (or never created): ingest is null, read is null, mute is false.
    expect(await c.ingest('c1', [msg(1, 'b')])).toBeNull();
    expect(await c.ingest('never', [msg(1, 'b')])).toBeNull();
    expect(await c.read('c1', 'b')).toBeNull();
    expect(await c.read('c1', 'b', 1)).toBeNull();
    expect(await c.setMuted('c1', 'b', true)).toBe(false);
    expect(await c.members('never')).toBeNull();

    // A conversation created again after its dissolution starts from scratch.
    expect(change(await c.addMembers('c1', ['b']))).toEqual({ added: ['b'], removed: [] });
    expect(await c.memberships('b')).toEqual([
      { conversation: 'c1', maxSeq: 0, readSeq: 0, muted: false, lastTs: 0, preview: null },
    ]);
  });

  it('conversations: a joiner starts at maxSeq, not muted; members in place keep cursor and mute', async () => {
    const { store } = ctx();
    const c = store.conversations;
    await c.replaceMembers('c', ['a', 'm']);
    await c.ingest('c', [msg(1, 'x'), msg(2, 'x'), msg(3, 'x')]);
    await c.setMuted('c', 'm', true);
    expect(await c.read('c', 'm', 1)).toBe(1);

    await c.addMembers('c', ['b']);
    expect(await membershipOf(store, 'b', 'c')).toMatchObject({
      maxSeq: 3,
      readSeq: 3,
      muted: false,
    });
    expect(await membershipOf(store, 'a', 'c')).toMatchObject({
      maxSeq: 3,
      readSeq: 0,
      muted: false,
    });

    // Members kept by a replace or named again by an add keep their cursor and mute.
    await c.replaceMembers('c', ['a', 'b', 'm', 'n']);
    await c.addMembers('c', ['m']);
    expect(await membershipOf(store, 'm', 'c')).toMatchObject({ readSeq: 1, muted: true });
    expect(await membershipOf(store, 'n', 'c')).toMatchObject({ readSeq: 3, muted: false });

    // Leaving forgets the cursor and the mute: joining again starts fresh.
    await c.ingest('c', [msg(4, 'x')]);
    expect(await c.removeMember('c', 'm')).toBe(true);
    expect(await membershipOf(store, 'm', 'c')).toBeUndefined();
    await c.addMembers('c', ['m']);
    expect(await membershipOf(store, 'm', 'c')).toMatchObject({ readSeq: 4, muted: false });
    // The same through a replace that drops and a replace that brings back.
    await c.setMuted('c', 'a', true);
    await c.replaceMembers('c', ['b', 'm', 'n']);
    await c.ingest('c', [msg(5, 'x')]);
    await c.replaceMembers('c', ['a', 'b', 'm', 'n']);
    expect(await membershipOf(store, 'a', 'c')).toMatchObject({ readSeq: 5, muted: false });
  });

  it('conversations: ingest is idempotent on seq, takes seqs out of order, highest seq wins ts/preview', async () => {
    const { store } = ctx();
    const c = store.conversations;
    await c.replaceMembers('c', ['a']);
    expect(
      await c.ingest('c', [
        msg(5, 'x', 500, { t: 'five', n: [1, { d: true }] }),
        msg(3, 'x', 300, { t: 'three' }),
      ]),
    ).toEqual({ maxSeq: 5, senders: {} });
    const five = {
      conversation: 'c',
      maxSeq: 5,
      readSeq: 0,
      muted: false,
      lastTs: 500,
      preview: { t: 'five', n: [1, { d: true }] },
    };
    expect(await c.memberships('a')).toEqual([five]);

    // A lower seq arriving late, and the same seq again with other content: nothing changes.
    expect(await c.ingest('c', [msg(4, 'x', 900, { t: 'four' })])).toEqual({
      maxSeq: 5,
      senders: {},
    });
    expect(await c.ingest('c', [msg(5, 'x', 999, { t: 'again' })])).toEqual({
      maxSeq: 5,
      senders: {},
    });
    expect(await c.ingest('c', [msg(3, 'x', 300, { t: 'three' })])).toEqual({
      maxSeq: 5,
      senders: {},
    });
    expect(await c.memberships('a')).toEqual([five]);

    // A higher seq without a preview clears it; an empty object is kept as such.
    expect(await c.ingest('c', [msg(7, 'x', 700)])).toEqual({ maxSeq: 7, senders: {} });
    expect(await membershipOf(store, 'a', 'c')).toMatchObject({
      maxSeq: 7,
      lastTs: 700,
      preview: null,
    });
    await c.ingest('c', [msg(9, 'x', 800, {}), msg(8, 'x', 850, { t: 'eight' })]);
    expect(await membershipOf(store, 'a', 'c')).toMatchObject({
      maxSeq: 9,
      lastTs: 800,
      preview: {},
    });
    expect(await c.ingest('c', [])).toEqual({ maxSeq: 9, senders: {} });

    // Large seqs keep full precision.
    const big = Number.MAX_SAFE_INTEGER;
    expect(await c.ingest('c', [msg(big, 'x', 1)])).toEqual({ maxSeq: big, senders: {} });
    expect(await c.read('c', 'a', big - 1)).toBe(big - 1);
    expect(await membershipOf(store, 'a', 'c')).toMatchObject({ maxSeq: big, readSeq: big - 1 });
  });

  it('conversations: a sender’s cursor moves to their message, for members only', async () => {
    const { store } = ctx();
    const c = store.conversations;
    await c.replaceMembers('c', ['a', 'b', 'q']);
    await c.setMuted('c', 'b', true);
    expect(
      await c.ingest('c', [
        msg(1, 'a'),
        msg(3, 'a'),
        msg(2, 'b'),
        msg(4, 'zoe'),
        msg(5, 'b'),
        msg(4, 'b'),
      ]),
    ).toEqual({ maxSeq: 5, senders: { a: 3, b: 5 } });
    expect(await membershipOf(store, 'a', 'c')).toMatchObject({ maxSeq: 5, readSeq: 3 });
    expect(await membershipOf(store, 'b', 'c')).toMatchObject({
      maxSeq: 5,
      readSeq: 5,
      muted: true,
    });
    expect(await membershipOf(store, 'q', 'c')).toMatchObject({ maxSeq: 5, readSeq: 0 });
    expect(await c.memberships('zoe')).toEqual([]); // a non-member sender gains nothing

    // A sender's cursor never moves back; a message re-ingested moves nobody, and its sender is
    // reported all the same (at their seq, which their cursor is at least), so a retried
    // batch's event is complete.
    expect(await c.read('c', 'a')).toBe(5);
    expect(await c.ingest('c', [msg(3, 'a')])).toEqual({ maxSeq: 5, senders: { a: 3 } });
    expect(await membershipOf(store, 'a', 'c')).toMatchObject({ readSeq: 5 });
    expect(await c.ingest('c', [msg(6, 'a'), msg(5, 'q')])).toEqual({
      maxSeq: 6,
      senders: { a: 6, q: 5 },
    });
    expect(await membershipOf(store, 'a', 'c')).toMatchObject({ maxSeq: 6, readSeq: 6 });
    expect(await membershipOf(store, 'q', 'c')).toMatchObject({ maxSeq: 6, readSeq: 5 });
  });

  it('conversations: a read with seq is guarded by maxSeq and never moves back; without seq it reads all', async () => {
    const { store } = ctx();
    const c = store.conversations;
    await c.replaceMembers('c', ['a', 'b']);
    expect(await c.read('c', 'a')).toBe(0); // nothing to read yet
    expect(await c.read('c', 'a', 4)).toBe(0); // ahead of maxSeq: capped
    await c.ingest(
      'c',
      [1, 2, 3, 4, 5].map((seq) => msg(seq, 'x')),
    );
    expect(await c.read('c', 'a', 3)).toBe(3);
    expect(await c.read('c', 'a', 2)).toBe(3);
    expect(await c.read('c', 'a', 99)).toBe(5);
    await c.ingest('c', [msg(6, 'x'), msg(7, 'x')]);
    expect(await membershipOf(store, 'a', 'c')).toMatchObject({ maxSeq: 7, readSeq: 5 });
    expect(await c.read('c', 'a')).toBe(7);
    expect(await c.read('c', 'b', 6)).toBe(6);
    expect(await membershipOf(store, 'b', 'c')).toMatchObject({ maxSeq: 7, readSeq: 6 });

    expect(await c.read('c', 'zoe')).toBeNull();
    expect(await c.read('c', 'zoe', 1)).toBeNull();
    expect(await c.read('never', 'a')).toBeNull();
    expect(await c.memberships('zoe')).toEqual([]);
  });

  it('conversations: setMuted keeps the cursor; ingest and read keep the mute', async () => {
    const { store } = ctx();
    const c = store.conversations;
    await c.replaceMembers('c', ['a', 'b']);
    await c.ingest('c', [msg(1, 'b'), msg(2, 'b')]);
    expect(await c.setMuted('c', 'a', true)).toBe(true);
    expect(await c.setMuted('c', 'a', true)).toBe(true);
    expect(await membershipOf(store, 'a', 'c')).toMatchObject({ readSeq: 0, muted: true });
    await c.ingest('c', [msg(3, 'a')]);
    expect(await membershipOf(store, 'a', 'c')).toMatchObject({
      maxSeq: 3,
      readSeq: 3,
      muted: true,
    });
    await c.ingest('c', [msg(4, 'b')]);
    expect(await c.read('c', 'a', 4)).toBe(4);
    expect(await membershipOf(store, 'a', 'c')).toMatchObject({ readSeq: 4, muted: true });
    expect(await c.setMuted('c', 'a', false)).toBe(true);
    expect(await membershipOf(store, 'a', 'c')).toMatchObject({ readSeq: 4, muted: false });
    expect(await membershipOf(store, 'b', 'c')).toMatchObject({ readSeq: 4, muted: false });
    expect(await c.setMuted('c', 'zoe', true)).toBe(false);
    expect(await c.setMuted('never', 'a', true)).toBe(false);
    expect(await c.memberships('zoe')).toEqual([]);
  });

  it('conversations: memberships lists every conversation of the user, and only theirs', async () => {
    const { store } = ctx();
    const c = store.conversations;
    await c.replaceMembers('c1', ['a', 'b']);
    await c.replaceMembers('c2', ['a']);
    await c.addMembers('c3', ['b']);
    await c.ingest('c1', [msg(1, 'b', 10, { text: 'hi' })]);
    await c.ingest('c2', [msg(4, 'x', 40)]);
    await c.setMuted('c2', 'a', true);
    expect(byConversation(await c.memberships('a'))).toEqual([
      {
        conversation: 'c1',
        maxSeq: 1,
        readSeq: 0,
        muted: false,
        lastTs: 10,
        preview: { text: 'hi' },
      },
      { conversation: 'c2', maxSeq: 4, readSeq: 0, muted: true, lastTs: 40, preview: null },
    ]);
    expect(byConversation(await c.memberships('b'))).toEqual([
      {
        conversation: 'c1',
        maxSeq: 1,
        readSeq: 1,
        muted: false,
        lastTs: 10,
        preview: { text: 'hi' },
      },
      { conversation: 'c3', maxSeq: 0, readSeq: 0, muted: false, lastTs: 0, preview: null },
    ]);
    await c.dissolve('c1');
    expect(await c.memberships('a')).toEqual([
      { conversation: 'c2', maxSeq: 4, readSeq: 0, muted: true, lastTs: 40, preview: null },
    ]);
    // The preview handed out is a copy: changing it changes nothing stored.
    await c.ingest('c3', [msg(1, 'x', 5, { nested: { k: 1 } })]);
    const [got] = await c.memberships('b');
    (got!.preview!.nested as { k: number }).k = 2;
    expect((await c.memberships('b'))[0]!.preview).toEqual({ nested: { k: 1 } });
  });

  it('conversations: membershipSeqs answers memberships without previews and ts, per user in order', async () => {
    const { store } = ctx();
    const c = store.conversations;
    await c.replaceMembers('c1', ['a', 'b']);
    await c.replaceMembers('c2', ['a']);
    await c.addMembers('c3', ['b']);
    await c.ingest('c1', [msg(1, 'b', 10, { text: 'hi' }), msg(2, 'x', 11)]);
    await c.ingest('c2', [msg(4, 'x', 40)]);
    await c.setMuted('c2', 'a', true);
    await c.read('c3', 'b');
    await c.replaceMembers('gone', ['a', 'b']);
    await c.dissolve('gone');
    const users = ['b', 'nobody', 'a', 'b'];
    const seqs = await c.membershipSeqs(users);
    expect(seqs.map(byConversation)).toEqual([
      [
        { conversation: 'c1', maxSeq: 2, readSeq: 1, muted: false },
        { conversation: 'c3', maxSeq: 0, readSeq: 0, muted: false },
      ],
      [],
      [
        { conversation: 'c1', maxSeq: 2, readSeq: 0, muted: false },
        { conversation: 'c2', maxSeq: 4, readSeq: 0, muted: true },
      ],
      [
        { conversation: 'c1', maxSeq: 2, readSeq: 1, muted: false },
        { conversation: 'c3', maxSeq: 0, readSeq: 0, muted: false },
      ],
    ]);
    // The same counts memberships() answers, user by user.
    for (const [i, user] of users.entries()) {
      const full = byConversation(await c.memberships(user));
      expect(
        full.map(({ conversation, maxSeq, readSeq, muted }) => ({
          conversation,
          maxSeq,
          readSeq,
          muted,
        })),
      ).toEqual(byConversation(seqs[i]!));
    }
    expect(await c.membershipSeqs([])).toEqual([]);
    // From indexes read earlier (userInputs): a conversation left since is no membership.
    const indexes = (await store.userInputs(users, { kinds: [], windowMs: 1 })).map(
      (i) => i.conversations,
    );
    await c.replaceMembers('c1', ['a']);
    const fromIndexes = await c.membershipSeqs(users, indexes);
    expect(fromIndexes.map(byConversation)).toEqual(
      (await c.membershipSeqs(users)).map(byConversation),
    );
    expect(byConversation(fromIndexes[0]!).map((m) => m.conversation)).toEqual(['c3']);
  });
});

// ------------------------------------------------------------------- memory and Redis alike

const USERS = ['u1', 'u2', 'u3', 'u4'] as const;
const CONVERSATIONS = ['c1', 'c2'] as const;
const REDDOTS = ['r1', 'r2'] as const;

type Op =
  | { op: 'publish'; id: number }
  | { op: 'withdraw'; id: number }
  | { op: 'countAfter'; seen: number }
  | { op: 'mark'; name: string; dt: number }
  | { op: 'clear'; name: string }
  | { op: 'see'; user: string }
  | { op: 'advanceSeen'; user: string; to: number }
  | { op: 'click'; user: string; names: string[] }
  | { op: 'drop'; ago: number; limit: number }
  | { op: 'tick'; hours: number }
  | { op: 'replace'; conversation: string; members: string[] }
  | { op: 'add'; conversation: string; members: string[] }
  | { op: 'remove'; conversation: string; user: string }
  | { op: 'dissolve'; conversation: string }
  | {
      op: 'ingest';
      conversation: string;
      messages: Array<{ seq: number; from: string; p: boolean }>;
    }
  | { op: 'read'; conversation: string; user: string; seq: number | undefined }
  | { op: 'mute'; conversation: string; user: string; muted: boolean };

const user = fc.constantFrom(...USERS);
const conversation = fc.constantFrom(...CONVERSATIONS);
const seq = fc.integer({ min: 1, max: 12 });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constant('publish' as const), id: fc.integer({ min: 1, max: 8 }) }),
  fc.record({ op: fc.constant('withdraw' as const), id: fc.integer({ min: 1, max: 8 }) }),
  fc.record({ op: fc.constant('countAfter' as const), seen: fc.integer({ min: 0, max: 8 }) }),
  fc.record({ op: fc.constant('mark' as const), name: fc.constantFrom(...REDDOTS), dt: fc.nat(5) }),
  fc.record({ op: fc.constant('clear' as const), name: fc.constantFrom(...REDDOTS) }),
  fc.record({ op: fc.constant('see' as const), user }),
  fc.record({ op: fc.constant('advanceSeen' as const), user, to: fc.integer({ min: 0, max: 8 }) }),
  fc.record({
    op: fc.constant('click' as const),
    user,
    names: fc.subarray([...REDDOTS]),
  }),
  fc.record({
    op: fc.constant('drop' as const),
    ago: fc.integer({ min: 0, max: 6 }),
    limit: fc.integer({ min: 0, max: 3 }),
  }),
  fc.record({ op: fc.constant('tick' as const), hours: fc.integer({ min: 0, max: 3 }) }),
  fc.record({
    op: fc.constant('replace' as const),
    conversation,
    members: fc.subarray([...USERS]),
  }),
  fc.record({ op: fc.constant('add' as const), conversation, members: fc.subarray([...USERS]) }),
  fc.record({ op: fc.constant('remove' as const), conversation, user }),
  fc.record({ op: fc.constant('dissolve' as const), conversation }),
  fc.record({
    op: fc.constant('ingest' as const),
    conversation,
    messages: fc.array(fc.record({ seq, from: fc.constantFrom(...USERS, 'x'), p: fc.boolean() }), {
      minLength: 1,
      maxLength: 3,
    }),
  }),
  fc.record({
    op: fc.constant('read' as const),
    conversation,
    user,
    seq: fc.option(seq, { nil: undefined }),
  }),
  fc.record({ op: fc.constant('mute' as const), conversation, user, muted: fc.boolean() }),
);

/** Runs one operation; the answer in a form that does not depend on set iteration order. */
async function apply(store: BubbleStore, o: Op, now: number): Promise<unknown> {
  switch (o.op) {
    case 'publish':
      return store.notices.publish(o.id, now);
    case 'withdraw':
      return store.notices.withdraw(o.id);
    case 'countAfter':
      return [await store.notices.countAfter(o.seen), await store.notices.liveIds()];
    case 'mark':
      return store.reddots.mark(o.name, now - o.dt);
    case 'clear':
      return [await store.reddots.clear(o.name), await store.reddots.all()];
    case 'see':
      return [
        await store.marks.see(o.user, now, () => store.notices.highestId()),
        await store.marks.state(o.user),
      ];
    case 'advanceSeen':
      return [await store.marks.advanceSeen(o.user, o.to), await store.marks.state(o.user)];
    case 'click':
      await store.marks.click(o.user, o.names, now);
      return store.marks.state(o.user);
    case 'drop':
      return store.marks.dropInactive(now - o.ago * HOUR_MS, o.limit, now);
    case 'tick':
      return null;
    case 'replace':
      return change(await store.conversations.replaceMembers(o.conversation, o.members));
    case 'add':
      return change(await store.conversations.addMembers(o.conversation, o.members));
    case 'remove':
      return store.conversations.removeMember(o.conversation, o.user);
    case 'dissolve':
      return sorted(await store.conversations.dissolve(o.conversation));
    case 'ingest':
      return store.conversations.ingest(
        o.conversation,
        o.messages.map((m) =>
          msg(m.seq, m.from, now + m.seq, m.p ? { s: m.seq, at: now } : undefined),
        ),
      );
    case 'read':
      return store.conversations.read(o.conversation, o.user, o.seq);
    case 'mute':
      return store.conversations.setMuted(o.conversation, o.user, o.muted);
  }
}

/** Everything observable, after every step. */
async function snapshot(store: BubbleStore): Promise<unknown> {
  const out: Record<string, unknown> = {
    highest: await store.notices.highestId(),
    live: await store.notices.liveIds(),
    countAfter: await Promise.all(
      Array.from({ length: 10 }, (_, seen) => store.notices.countAfter(seen)),
    ),
    reddots: await store.reddots.all(),
  };
  for (const u of USERS) {
    out[`marks ${u}`] = await store.marks.state(u);
    out[`in ${u}`] = byConversation(await store.conversations.memberships(u));
  }
  out.seqs = (await store.conversations.membershipSeqs([...USERS, ...USERS])).map(byConversation);
  for (const c of CONVERSATIONS) {
    const members = await store.conversations.members(c);
    out[`members ${c}`] = members && sorted(members);
  }
  return out;
}

describeEachEngine(
  'extras: memory and Redis answer alike',
  (ctx) => {
    it('random operation sequences give identical answers and state on both engines', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(opArb, { minLength: 1, maxLength: 40, size: 'medium' }),
          async (ops) => {
            const redis = ctx().freshStore();
            const memory = new MemoryStore({ pools: redis.pools });
            let now = T0;
            for (const [i, o] of ops.entries()) {
              if (o.op === 'tick') now += o.hours * HOUR_MS;
              const [fromMemory, fromRedis] = [
                await apply(memory, o, now),
                await apply(redis, o, now),
              ];
              expect(fromRedis, `answer of step ${i} ${JSON.stringify(o)}`).toEqual(fromMemory);
            }
            expect(await snapshot(redis)).toEqual(await snapshot(memory));
          },
        ),
        { numRuns: 40 },
      );
    });
  },
  ['redis'],
);
