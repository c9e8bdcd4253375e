/**
 * The BubbleStore contract (packages/store/src/bubble-store/bubble-store.ts), run against both engines: follows,
 * cursors, badge states and the inputs of a computation. Both engines must pass the very same
 * assertions. The other parts: test/contract/store-contract-*.
 */
import { expect, it } from 'vitest';
import { T0, describeEachEngine } from '../support/engines.js';
import { expectBubbleError, sorted } from '../support/store-contract.js';

describeEachEngine('BubbleStore contract: follows, cursors, badges, inputs', (ctx) => {
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
    const writes: Promise<boolean>[] = [];
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
    expect(await store.feedInputs('u')).toEqual({
      follows: [],
      topics: [],
      readAt: null,
      held: true,
    });
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
});
