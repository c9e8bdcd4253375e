/**
 * The contract of conversations (packages/store/src/conversations; docs/semantics.md
 * "Conversations"): Conversations run against both engines with the very same assertions.
 */
import type { BubbleStore, ConversationMessage } from '@bubble/store';
import { expect, it } from 'vitest';
import { describeEachEngine } from '../support/engines.js';
import { byConversation, change, membershipOf, msg, sorted } from './extras-contract-support.js';

describeEachEngine('extras contract', (ctx) => {
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
    await threeConversations(c, [msg(1, 'b', 10, { text: 'hi' })]);
    const inC1 = (readSeq: number) => ({
      conversation: 'c1',
      maxSeq: 1,
      readSeq,
      muted: false,
      lastTs: 10,
      preview: { text: 'hi' },
    });
    const inC2 = {
      conversation: 'c2',
      maxSeq: 4,
      readSeq: 0,
      muted: true,
      lastTs: 40,
      preview: null,
    };
    expect(byConversation(await c.memberships('a'))).toEqual([inC1(0), inC2]);
    expect(byConversation(await c.memberships('b'))).toEqual([
      inC1(1),
      { conversation: 'c3', maxSeq: 0, readSeq: 0, muted: false, lastTs: 0, preview: null },
    ]);
    await c.dissolve('c1');
    expect(await c.memberships('a')).toEqual([inC2]);
    // The preview handed out is a copy: changing it changes nothing stored.
    await c.ingest('c3', [msg(1, 'x', 5, { nested: { k: 1 } })]);
    const [got] = await c.memberships('b');
    (got!.preview!.nested as { k: number }).k = 2;
    expect((await c.memberships('b'))[0]!.preview).toEqual({ nested: { k: 1 } });
  });

  it('conversations: membershipSeqs answers memberships without previews and ts, per user in order', async () => {
    const { store } = ctx();
    const c = store.conversations;
    await threeConversations(c, [msg(1, 'b', 10, { text: 'hi' }), msg(2, 'x', 11)]);
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

/**
 * a and b in c1, with `inC1` ingested; a alone in c2, muted, with message 4 at ts 40; b alone
 * in c3, nothing said.
 */
async function threeConversations(
  c: BubbleStore['conversations'],
  inC1: ConversationMessage[],
): Promise<void> {
  await c.replaceMembers('c1', ['a', 'b']);
  await c.replaceMembers('c2', ['a']);
  await c.addMembers('c3', ['b']);
  await c.ingest('c1', inC1);
  await c.ingest('c2', [msg(4, 'x', 40)]);
  await c.setMuted('c2', 'a', true);
}
