/**
 * The cluster store contract (packages/store/src/change-log, presence, fenced-badges): presence, run against both engines with the very same assertions. The other parts:
 * test/contract/cluster-store-*.test.ts.
 */
import { waitFor } from '@bubble/test-utils';
import { expect, it } from 'vitest';
import { TEST_POOLS, T0, describeEachEngine } from '../support/engines.js';
import {
  allPoolEvents,
  elapse,
  listenAsGateways,
  offline,
  online,
  partsOf,
  usersOf,
} from '../support/cluster-store-contract.js';

describeEachEngine('cluster store contract: presence', (ctx) => {
  // ---------------------------------------------------------------- presence
  // Presence and routes lapse on the store's own clock (Redis TIME), so these tests let real
  // time pass: short TTLs, waits with deadlines for what lapses.

  it('setOnline records one online event; a renewal only extends the presence', async () => {
    const { presence, log } = partsOf(ctx());
    const [u, brief] = usersOf(7, 2);
    expect(await presence.setOnline([{ user: u!, ttlMs: 500 }])).toEqual([
      { user: u, changed: true },
    ]);
    expect(await presence.setOnline([{ user: u!, ttlMs: 60_000 }])).toEqual([
      { user: u, changed: false },
    ]);
    await presence.setOnline([{ user: brief!, ttlMs: 200 }]);
    await waitFor(async () => !(await presence.isOnline(brief!)), { timeoutMs: 10_000 });
    await elapse(500);
    expect(await presence.isOnline(u!)).toBe(true);
    expect(await presence.isOnline('nobody')).toBe(false);
    expect(await allPoolEvents(log, 7)).toEqual([online(u!), online(brief!)]);
  });

  it('a shorter TTL never shortens a presence another holder extended', async () => {
    const { presence } = partsOf(ctx());
    const [u] = usersOf(7, 1);
    await presence.setOnline([{ user: u!, ttlMs: 60_000 }]);
    expect(await presence.setOnline([{ user: u!, ttlMs: 100 }])).toEqual([
      { user: u, changed: false },
    ]);
    await elapse(300);
    expect(await presence.isOnline(u!)).toBe(true);
  });

  it('routes: changes reach the gateways holding the user; unroute tells who nobody holds', async () => {
    const { badges } = partsOf(ctx());
    const [u, v] = usersOf(9, 2);
    const { heard, stops } = await listenAsGateways(badges, ['g1', 'g2'], 'f');
    await badges.route('g1', [u!, v!], 60_000);
    await badges.route('g2', [u!], 60_000);
    await badges.saveUnfenced(u!, { f: 1 }, T0 + 1);
    await badges.saveUnfenced(v!, { f: 2 }, T0 + 1);
    await waitFor(() => heard.get('g1')!.length === 2 && heard.get('g2')!.length === 1);
    expect(heard.get('g1')!.sort()).toEqual([`${u}=1`, `${v}=2`]);
    expect(heard.get('g2')).toEqual([`${u}=1`]);

    // u is still held by g2; v by nobody; a user never routed is held by nobody either.
    expect(await badges.unroute('g1', [u!, v!, 'never-routed'])).toEqual([v, 'never-routed']);
    // A lapsed route holds nobody: g2's, renewed for a moment only.
    await badges.route('g2', [u!], 200);
    expect(await badges.unroute('g1', [u!])).toEqual([]);
    await waitFor(async () => (await badges.unroute('g1', [u!])).length === 1, {
      timeoutMs: 10_000,
    });
    for (const stop of stops) await stop();
  });

  it('list signals reach the gateways holding each user, across pools, and no other', async () => {
    const { badges } = partsOf(ctx());
    const [u, v] = usersOf(2, 2);
    const [w] = usersOf(5, 1);
    const heard = new Map<string, string[]>([
      ['g1', []],
      ['g2', []],
    ]);
    const stops = await Promise.all(
      [...heard.keys()].map((gateway) =>
        badges.subscribeListSignals(gateway, (users) => heard.get(gateway)!.push(...users)),
      ),
    );
    await badges.route('g1', [u!, w!], 60_000);
    await badges.route('g2', [u!], 60_000);
    await badges.signalLists([u!, v!, w!, 'never-routed']);
    await waitFor(() => heard.get('g1')!.length === 2 && heard.get('g2')!.length === 1);
    expect(heard.get('g1')!.sort()).toEqual([u, w].sort());
    expect(heard.get('g2')).toEqual([u]);
    // A lapsed route is not signalled: once it lapsed, the next signal reaches g2 only.
    await badges.route('g1', [u!], 200);
    await waitFor(
      async () => {
        heard.set('g1', []);
        heard.set('g2', []);
        await badges.signalLists([u!]);
        await waitFor(() => heard.get('g2')!.length === 1);
        return heard.get('g1')!.length === 0;
      },
      { timeoutMs: 10_000 },
    );
    for (const stop of stops) await stop();
  });

  it('setOnline answers in input order across pools; a repeat within a call is a renewal', async () => {
    const { presence, log } = partsOf(ctx());
    const [a, b] = usersOf(3, 2);
    const [c] = usersOf(4, 1);
    await presence.setOnline([{ user: b!, ttlMs: 60_000 }]);
    const changes = await presence.setOnline([
      { user: c!, ttlMs: 200 },
      { user: a!, ttlMs: 60_000 },
      { user: b!, ttlMs: 60_000 },
      { user: c!, ttlMs: 60_000 },
    ]);
    expect(changes).toEqual([
      { user: c, changed: true },
      { user: a, changed: true },
      { user: b, changed: false },
      { user: c, changed: false },
    ]);
    expect(await allPoolEvents(log, 3)).toEqual([online(b!), online(a!)]);
    expect(await allPoolEvents(log, 4)).toEqual([online(c!)]);
    // The later entry of the repeat wins: c is online past the first one's TTL.
    await elapse(400);
    expect(await presence.isOnline(c!)).toBe(true);
    expect(await presence.setOnline([])).toEqual([]);
  });

  it('a user whose presence lapsed comes online again with a new event', async () => {
    const { presence, log } = partsOf(ctx());
    const [u] = usersOf(9, 1);
    await presence.setOnline([{ user: u!, ttlMs: 100 }]);
    await waitFor(async () => !(await presence.isOnline(u!)), { timeoutMs: 10_000 });
    expect(await presence.setOnline([{ user: u!, ttlMs: 60_000 }])).toEqual([
      { user: u, changed: true },
    ]);
    expect(await allPoolEvents(log, 9)).toEqual([online(u!), online(u!)]);
  });

  it('expire removes lapsed users up to the limit, earliest first, recording offline events', async () => {
    const { presence, log } = partsOf(ctx());
    const [a, b, c, d] = usersOf(11, 4);
    await presence.setOnline([
      { user: c!, ttlMs: 300 },
      { user: a!, ttlMs: 100 },
      { user: d!, ttlMs: 60_000 },
      { user: b!, ttlMs: 200 },
    ]);
    await waitFor(async () => (await presence.members(11)).length === 1, { timeoutMs: 10_000 });
    expect(await presence.expire(11, 2)).toEqual([a, b]);
    expect(await presence.expire(11, 2)).toEqual([c]);
    expect(await presence.expire(11, 2)).toEqual([]);
    expect(await presence.members(11)).toEqual([d]);
    expect(await presence.expire(12, 2)).toEqual([]);
    expect((await allPoolEvents(log, 11)).slice(4)).toEqual([
      offline(a!),
      offline(b!),
      offline(c!),
    ]);
    // Expired users are gone: coming back is a change.
    expect(await presence.setOnline([{ user: a!, ttlMs: 60_000 }])).toEqual([
      { user: a, changed: true },
    ]);
    await expect(presence.expire(11, 0)).rejects.toThrow(RangeError);
  });

  it('setOffline records an offline event only for a user with a presence entry', async () => {
    const { presence, log } = partsOf(ctx());
    const [u, lapsed] = usersOf(5, 2);
    expect(await presence.setOffline(u!)).toBe(false);
    expect(await allPoolEvents(log, 5)).toEqual([]);
    await presence.setOnline([
      { user: u!, ttlMs: 60_000 },
      { user: lapsed!, ttlMs: 10 },
    ]);
    expect(await presence.setOffline(u!)).toBe(true);
    expect(await presence.isOnline(u!)).toBe(false);
    expect(await presence.setOffline(u!)).toBe(false);
    // Lapsed but not yet expired: its offline event is still owed, so this records it.
    await waitFor(async () => !(await presence.isOnline(lapsed!)), { timeoutMs: 10_000 });
    expect(await presence.setOffline(lapsed!)).toBe(true);
    expect(await presence.expire(5, 10)).toEqual([]);
    expect(await allPoolEvents(log, 5)).toEqual([
      online(u!),
      online(lapsed!),
      offline(u!),
      offline(lapsed!),
    ]);
  });

  it('members and poolSizes count the users online now', async () => {
    const { presence } = partsOf(ctx());
    const short = [...usersOf(0, 3), ...usersOf(42, 2)];
    const long = [...usersOf(0, 5).slice(3), ...usersOf(99, 1)];
    await presence.setOnline([
      ...short.map((user) => ({ user, ttlMs: 1_000 })),
      ...long.map((user) => ({ user, ttlMs: 60_000 })),
    ]);
    const sizes = await presence.poolSizes();
    expect(sizes).toHaveLength(TEST_POOLS);
    const expected = Array<number>(TEST_POOLS).fill(0);
    expected[0] = 5;
    expected[42] = 2;
    expected[99] = 1;
    expect(sizes).toEqual(expected);
    expect([...(await presence.members(0))].sort()).toEqual([...usersOf(0, 5)].sort());
    // Lapsed users no longer count, even before expire() removes them.
    expected[0] = 2;
    expected[42] = 0;
    await waitFor(async () => (await presence.poolSizes())[42] === 0, { timeoutMs: 10_000 });
    expect(await presence.poolSizes()).toEqual(expected);
    expect([...(await presence.members(0))].sort()).toEqual(usersOf(0, 5).slice(3).sort());
    expect(await presence.members(1)).toEqual([]);
  });
});
