/**
 * The cluster store contract (packages/store/src/change-log, presence, fenced-badges): fenced badge writes, run against both engines with the very same assertions. The other parts:
 * test/contract/cluster-store-*.test.ts.
 */
import type { BadgeChange } from '@bubble/protocol';
import { waitFor } from '@bubble/test-utils';
import { expect, it } from 'vitest';
import { T0, describeEachEngine } from '../support/engines.js';
import { partsOf, usersOf } from '../support/cluster-store-contract.js';

describeEachEngine('cluster store contract: fenced badges', (ctx) => {
  // ---------------------------------------------------------------- fenced badges

  it('stores counts of any size and several fields as given, from write objects the writer reuses', async () => {
    const { badges, setFence, storedBadge } = partsOf(ctx());
    const [a, b] = usersOf(8, 2);
    await setFence(8, 1);
    const big = Number.MAX_SAFE_INTEGER;
    const write = { user: a!, fields: { f: big } as Record<string, number>, known: undefined };
    const first = await badges.saveFenced(8, 1, [write], T0, { stamps: true });
    expect(first.stamps![0]).toMatchObject({ version: 1, changed: true });
    // The engine has read the write: reused for another user and other counts.
    write.user = b!;
    write.fields = { 'c:room-9': 10, f: 0, n: 3, 'r:dot': 1 };
    await badges.saveFenced(8, 1, [write], T0 + 1, { stamps: true });
    const known = { epoch: first.stamps![0]!.epoch, version: 1 };
    await badges.saveFenced(8, 1, [{ user: a!, fields: { f: 1_000_000_007 }, known }], T0 + 2, {
      stamps: true,
    });
    expect(known.version).toBe(2);
    expect(await storedBadge(a!)).toMatchObject({ version: 2, fields: { f: 1_000_000_007 } });
    expect(await storedBadge(b!)).toMatchObject({
      version: 1,
      computedAt: T0 + 1,
      fields: { 'c:room-9': 10, n: 3, 'r:dot': 1 },
    });
    await badges.saveFenced(8, 1, [{ user: a!, fields: { f: big }, known }], T0 + 3, {
      stamps: true,
    });
    expect(await storedBadge(a!)).toMatchObject({ version: 3, fields: { f: big } });
  });

  it('a save with the current fence is accepted; versions move only on a change', async () => {
    const { badges, setFence, storedBadge } = partsOf(ctx());
    const [a, b] = usersOf(8, 2);
    await setFence(8, 3);
    const first = await badges.saveFenced(
      8,
      3,
      [
        { user: a!, fields: { feed: 2, notices: 0 } },
        { user: b!, fields: {} },
      ],
      T0,
      { stamps: true },
    );
    expect(first.accepted).toBe(true);
    expect(first.stamps!.map(({ version, changed }) => ({ version, changed }))).toEqual([
      { version: 1, changed: true },
      { version: 1, changed: true },
    ]);
    const epochOfA = first.stamps![0]!.epoch;
    expect(epochOfA).toMatch(/^\S+$/);
    expect(await storedBadge(a!)).toEqual({
      epoch: epochOfA,
      version: 1,
      computedAt: T0,
      fields: { feed: 2 },
    });
    expect(await storedBadge(b!)).toEqual({
      epoch: first.stamps![1]!.epoch,
      version: 1,
      computedAt: T0,
      fields: {},
    });

    // Same counts (a zero count is no count): no new version, and nothing rewritten (a core's
    // unchanged badge keeps the time its counts were stored at).
    const same = await badges.saveFenced(8, 3, [{ user: a!, fields: { feed: 2 } }], T0 + 1, {
      stamps: true,
    });
    expect(same).toMatchObject({
      accepted: true,
      changed: 0,
      stamps: [{ epoch: epochOfA, version: 1, changed: false }],
    });
    expect((await storedBadge(a!))?.computedAt).toBe(T0);

    // A later acquisition's token, once it is the pool's, is accepted (fencing-tokens.test.ts
    // has the refusals).
    await setFence(8, 4);
    const changed = await badges.saveFenced(
      8,
      4,
      [{ user: a!, fields: { feed: 3, dots: 1 } }],
      T0 + 2,
      { stamps: true },
    );
    expect(changed).toMatchObject({
      accepted: true,
      changed: 1,
      stamps: [{ epoch: epochOfA, version: 2, changed: true }],
    });
    expect(await storedBadge(a!)).toEqual({
      epoch: epochOfA,
      version: 2,
      computedAt: T0 + 2,
      fields: { feed: 3, dots: 1 },
    });
    expect(await badges.staleWritesRejected(8)).toBe(0);
    expect(await badges.saveFenced(8, 4, [], T0, { stamps: true })).toMatchObject({
      accepted: true,
      changed: 0,
      stamps: [],
    });
  });

  it('a save with an older fence is refused and counted, and writes nothing', async () => {
    const { badges, setFence, storedBadge } = partsOf(ctx());
    const [a] = usersOf(8, 1);
    const [b] = usersOf(9, 1);
    // No token taken yet: nothing is accepted.
    expect(
      (await badges.saveFenced(9, 0, [{ user: b!, fields: { feed: 1 } }], T0, { stamps: true }))
        .accepted,
    ).toBe(false);
    await setFence(8, 5);
    expect(
      await badges.saveFenced(8, 4, [{ user: a!, fields: { feed: 1 } }], T0, { stamps: true }),
    ).toEqual({ accepted: false, changed: 0 });
    expect(await storedBadge(a!)).toBeNull();
    expect(await badges.staleWritesRejected(8)).toBe(1);
    await badges.saveFenced(8, 1, [{ user: a!, fields: { feed: 1 } }], T0, { stamps: true });
    expect(await badges.staleWritesRejected(8)).toBe(2);
    expect(await badges.staleWritesRejected(9)).toBe(1);
    const accepted = await badges.saveFenced(8, 5, [{ user: a!, fields: { feed: 1 } }], T0, {
      stamps: true,
    });
    expect(accepted.accepted).toBe(true);
    expect(accepted.stamps![0]).toMatchObject({ version: 1, changed: true });
    // A user of another pool is a caller's mistake, not a write.
    await expect(
      badges.saveFenced(8, 5, [{ user: b!, fields: {} }], T0, { stamps: true }),
    ).rejects.toThrow(RangeError);
  });

  it('a batch larger than the script works in chunks of is stored whole', async () => {
    const { badges, setFence, storedBadge } = partsOf(ctx());
    const users = usersOf(30, 4_500);
    await setFence(30, 1);
    const first = await badges.saveFenced(
      30,
      1,
      users.map((user, i) => ({ user, fields: { f: i + 1 } })),
      T0,
      { stamps: true },
    );
    expect(first.stamps!.filter((s) => s.changed && s.version === 1)).toHaveLength(users.length);
    const second = await badges.saveFenced(
      30,
      1,
      users.map((user, i) => ({ user, fields: { f: i % 2 === 0 ? i + 1 : i + 2 } })),
      T0 + 1,
      { stamps: true },
    );
    expect(second.stamps!.filter((s) => s.changed)).toHaveLength(users.length / 2);
    expect(second.stamps![4_499]).toMatchObject({ version: 2, changed: true });
    expect(await storedBadge(users[4_499]!)).toMatchObject({ version: 2, fields: { f: 4_501 } });
    expect(await storedBadge(users[4_498]!)).toMatchObject({ version: 1, fields: { f: 4_499 } });
  });

  it("a writer's own belief gives the next version; another writer's change between is noticed", async () => {
    const { badges, log, presence, setFence, storedBadge } = partsOf(ctx());
    const [a, b] = usersOf(12, 2);
    await setFence(12, 1);
    await presence.setOnline([{ user: a!, ttlMs: 60_000 }]);
    const seen = await log.poolLogEnd(12);
    const belief = { epoch: '', version: 0 };
    const save = (fields: Record<string, number>, at: number, known = belief, user = a!) =>
      badges.saveFenced(12, 1, [{ user, fields, known }], at, { seenLog: seen, stamps: true });

    const first = await save({ f: 1 }, T0);
    expect(first.stamps![0]).toMatchObject({ version: 1, changed: true });
    const { epoch } = first.stamps![0]!;
    // The belief follows the save.
    expect(belief).toEqual({ epoch, version: 1 });
    /** A save that changes the badge: the next version is stored and believed. */
    const expectSavedAs = async (fields: Record<string, number>, at: number, version: number) => {
      expect(await save(fields, at)).toMatchObject({
        changed: 1,
        stamps: [{ version, changed: true }],
      });
      expect(belief).toEqual({ epoch, version });
      expect(await storedBadge(a!)).toEqual({ epoch, version, computedAt: at, fields });
    };
    await expectSavedAs({ f: 2 }, T0 + 1, 2);

    // A gateway's read between two of ours: our belief is behind, the stored state decides.
    await badges.saveUnfenced(a!, { f: 0 }, T0 + 2);
    expect((await storedBadge(a!))?.version).toBe(3);
    await expectSavedAs({ f: 7 }, T0 + 3, 4);
    // Once decided, the belief is trusted again.
    expect(await save({ f: 8 }, T0 + 4)).toMatchObject({ stamps: [{ version: 5 }] });

    // A gateway stored the very counts we are about to: nothing changes, not even computedAt.
    await badges.saveUnfenced(a!, { f: 9 }, T0 + 5);
    expect(await save({ f: 9 }, T0 + 6)).toMatchObject({
      changed: 0,
      stamps: [{ version: 6, changed: false }],
    });
    expect(belief).toEqual({ epoch, version: 6 });
    expect(await storedBadge(a!)).toMatchObject({ version: 6, computedAt: T0 + 5 });

    // A user who went offline after the log position we read (so we still hold them), then had
    // their badge written by a gateway: the write is noticed although they are not present.
    await presence.setOnline([{ user: b!, ttlMs: 60_000 }]);
    const seenB = await log.poolLogEnd(12);
    const beliefB = { epoch: '', version: 0 };
    await badges.saveFenced(12, 1, [{ user: b!, fields: { f: 1 }, known: beliefB }], T0 + 7, {
      seenLog: seenB,
      stamps: true,
    });
    expect(beliefB.version).toBe(1);
    await presence.setOffline(b!);
    await badges.saveUnfenced(b!, { f: 3 }, T0 + 8);
    const late = await badges.saveFenced(
      12,
      1,
      [{ user: b!, fields: { f: 4 }, known: beliefB }],
      T0 + 9,
      { seenLog: seenB, stamps: true },
    );
    expect(late).toMatchObject({ changed: 1, stamps: [{ version: 3, changed: true }] });
    expect(await storedBadge(b!)).toMatchObject({ version: 3, fields: { f: 4 } });
  });

  it('without a log position every belief is checked against the stored state', async () => {
    const { badges, setFence, storedBadge } = partsOf(ctx());
    const [a] = usersOf(13, 1);
    await setFence(13, 1);
    const belief = { epoch: '', version: 0 };
    const save = (fields: Record<string, number>, at: number, known: typeof belief) =>
      badges.saveFenced(13, 1, [{ user: a!, fields, known }], at, { stamps: true });
    await save({ f: 1 }, T0, belief);
    await save({ f: 2 }, T0 + 1, belief);
    const { epoch } = belief;
    expect(belief.version).toBe(2);

    // A stale belief (1 while 2 is stored), both when the counts differ and when they are equal.
    const stale = { epoch, version: 1 };
    const third = await save({ f: 3 }, T0 + 2, stale);
    expect(third).toMatchObject({ changed: 1, stamps: [{ version: 3, changed: true }] });
    expect(stale).toEqual({ epoch, version: 3 });
    const again = { epoch, version: 2 };
    const same = await save({ f: 3 }, T0 + 3, again);
    expect(same).toMatchObject({ changed: 0, stamps: [{ version: 3, changed: false }] });
    expect(again).toEqual({ epoch, version: 3 });

    // Another epoch, "nothing stored" while something is, and "unknown" (-1): the next version
    // of what is stored, in its epoch.
    const other = { epoch: 'elsewhere', version: 3 };
    const fourth = await save({ f: 4 }, T0 + 4, other);
    expect(fourth).toMatchObject({ changed: 1, stamps: [{ epoch, version: 4 }] });
    const none = { epoch: '', version: 0 };
    await save({ f: 5 }, T0 + 5, none);
    expect(none).toEqual({ epoch, version: 5 });
    const unknown = { epoch: '', version: -1 };
    await save({ f: 5 }, T0 + 6, unknown);
    expect(unknown).toEqual({ epoch, version: 5 });
    expect(await storedBadge(a!)).toMatchObject({ version: 5, computedAt: T0 + 5 });
  });

  it('a large batch with a few users written by others stores every state at its right version', async () => {
    const { badges, log, presence, setFence, storedBadge } = partsOf(ctx());
    const users = usersOf(31, 4_500);
    await setFence(31, 1);
    await presence.setOnline(users.map((user) => ({ user, ttlMs: 60_000 })));
    const seen = await log.poolLogEnd(31);
    const beliefs = users.map(() => ({ epoch: '', version: 0 }));
    await badges.saveFenced(
      31,
      1,
      users.map((user, i) => ({ user, fields: { f: i + 1 }, known: beliefs[i]! })),
      T0,
      { seenLog: seen, stamps: true },
    );
    expect(beliefs.every((belief) => belief.version === 1)).toBe(true);
    // Someone else changes three users (one in each chunk of the Redis script) behind our back.
    for (const i of [5, 3_100, 4_400]) await badges.saveUnfenced(users[i]!, { f: 0 }, T0 + 1);
    const second = await badges.saveFenced(
      31,
      1,
      users.map((user, i) => ({ user, fields: { f: i + 2 }, known: beliefs[i]! })),
      T0 + 2,
      { seenLog: seen, stamps: true },
    );
    expect(second.changed).toBe(users.length);
    for (const i of [0, 5, 3_099, 3_100, 4_400, 4_499]) {
      const expected = [5, 3_100, 4_400].includes(i) ? 3 : 2;
      expect(second.stamps![i]).toMatchObject({ version: expected, changed: true });
      expect(beliefs[i]!.version).toBe(expected);
      expect(await storedBadge(users[i]!)).toMatchObject({
        version: expected,
        fields: { f: i + 2 },
      });
    }

    // More users written by others than the batch holds: each of the batch's is still noticed.
    for (const user of users.slice(100, 140)) await badges.saveUnfenced(user, { f: 0 }, T0 + 3);
    const small = [0, 1, 120, 121, 200];
    const third = await badges.saveFenced(
      31,
      1,
      small.map((i) => ({ user: users[i]!, fields: { f: i + 3 }, known: beliefs[i]! })),
      T0 + 4,
      { seenLog: seen },
    );
    // Not asked for stamps (a core's sweep): the beliefs alone say what is stored now.
    expect(third).toEqual({ accepted: true, changed: small.length });
    expect(small.map((i) => beliefs[i]!.version)).toEqual([3, 3, 4, 4, 3]);
    for (const i of small) {
      const { epoch, version } = beliefs[i]!;
      expect(await storedBadge(users[i]!)).toMatchObject({ epoch, version, fields: { f: i + 3 } });
    }
  });

  it('unfenced changes are published to the subscribers of their pool, fenced ones are not', async () => {
    const { badges, setFence } = partsOf(ctx());
    const [a, b] = usersOf(20, 2);
    const [c] = usersOf(21, 1);
    await setFence(20, 1);
    await setFence(21, 1);
    const both: Array<[number, BadgeChange[]]> = [];
    const only21: Array<[number, BadgeChange[]]> = [];
    const stopBoth = await badges.subscribe([20, 21], (pool, changes) =>
      both.push([pool, changes]),
    );
    const stop21 = await badges.subscribe([21], (pool, changes) => only21.push([pool, changes]));

    // A gateway's writes (cold starts, reads): the pool's owner must hear of them.
    const sa = await badges.saveUnfenced(a!, { feed: 1 }, T0);
    // Nothing changes: nothing is published (a message would arrive before the next one).
    await badges.saveUnfenced(a!, { feed: 1 }, T0 + 1);
    // The owner's own writes it knows: not published on the pool's channel.
    await badges.saveFenced(20, 1, [{ user: b!, fields: { feed: 2 } }], T0 + 1, { stamps: true });
    const sb = await badges.saveUnfenced(b!, { feed: 3, notices: 1 }, T0 + 2);
    const sc = await badges.saveUnfenced(c!, {}, T0 + 3);
    await waitFor(() => both.length >= 3 && only21.length >= 1);

    expect(both).toEqual([
      [20, [{ user: a, epoch: sa.epoch, version: 1, fields: { feed: 1 }, computedAt: T0 }]],
      [
        20,
        [
          {
            user: b,
            epoch: sb.epoch,
            version: 2,
            fields: { feed: 3, notices: 1 },
            computedAt: T0 + 2,
          },
        ],
      ],
      [21, [{ user: c, epoch: sc.epoch, version: 1, fields: {}, computedAt: T0 + 3 }]],
    ]);
    // Pool 20's messages went out first; had they reached this subscriber, they would be here.
    expect(only21).toEqual([both[2]]);

    await stopBoth();
    await stopBoth();
    await badges.saveUnfenced(c!, { feed: 9 }, T0 + 4);
    await waitFor(() => only21.length >= 2);
    expect(both).toHaveLength(3);
    // Fenced saves, refused or accepted, publish nothing here.
    await setFence(21, 2);
    await badges.saveFenced(21, 1, [{ user: c!, fields: { feed: 10 } }], T0 + 5, { stamps: true });
    await badges.saveFenced(21, 2, [{ user: c!, fields: { feed: 11 } }], T0 + 6, { stamps: true });
    await badges.saveUnfenced(c!, { feed: 12 }, T0 + 7);
    await waitFor(() => only21.length >= 3);
    expect(only21.map(([, changes]) => changes[0]!.fields)).toEqual([
      {},
      { feed: 9 },
      { feed: 12 },
    ]);
    expect(only21[2]![1][0]!.version).toBe(4);
    await stop21();
  });
});
