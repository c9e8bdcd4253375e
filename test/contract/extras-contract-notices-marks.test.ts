/**
 * The contract of the sources beside the feed (packages/store/src: notices, red-dots, marks;
 * docs/semantics.md "System notices", "Red dots"): NoticeBoard, RedDots and UserMarks, run
 * against both engines with the very same assertions.
 */
import { DAY_MS, HOUR_MS, MINUTE_MS } from '@bubble/protocol';
import { expect, it } from 'vitest';
import { T0, describeEachEngine, manualService } from '../support/engines.js';
import { JOB_NOW, highestOf, sorted } from './extras-contract-support.js';

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
});
