import { DAY_MS, HOUR_MS } from '@bubble/protocol';
import type { BadgeContext } from './context.js';
import { countersChanged } from './pool-events.js';

/** How stale a user's recorded last sight may be: the stores write it at most once an hour. */
const SIGHT_RESOLUTION_MS = HOUR_MS;

/**
 * When users were last seen (end-user calls only): the first sight starts a user's notice
 * cursor, and the marks of users unseen for `inactiveDays` are dropped.
 */
export class Sightings {
  constructor(private readonly ctx: BadgeContext) {}

  /**
   * The first sight of a user starts their notice cursor at the highest id published; the store
   * appends the user's `marks` event with it (a core holding them counted no notices while they
   * were unseen), and a later sight appends it if that append failed.
   */
  async see(user: string): Promise<void> {
    const { store, clock } = this.ctx;
    await store.marks.see(user, clock.now(), () => store.notices.highestId());
  }

  /** Drops the marks of users unseen for BUBBLE_INACTIVE_DAYS, at most `limit` per call. */
  async dropInactiveUsers(limit: number): Promise<string[]> {
    const { store, clock, rules } = this.ctx;
    // A sight is recorded at most once an hour (the stores' throttle), so the recorded one may
    // be up to an hour older than the last: never drop a user seen within inactiveDays.
    const cutoff = clock.now() - rules.inactiveDays * DAY_MS - SIGHT_RESOLUTION_MS;
    // The store appends the dropped users' marks events before it forgets them.
    const dropped = await store.marks.dropInactive(cutoff, limit, clock.now());
    await store.counters.dropUsers(dropped);
    // After the drop: a core that reloaded a user's counters in between reloads them again.
    await countersChanged(this.ctx, dropped);
    return dropped;
  }

  /**
   * Deletes the stored badge states of users offline for BUBBLE_LOOKBACK_DAYS (at most `limit`
   * looked at per pool): their next computation starts a new epoch.
   */
  async expireOfflineBadges(limit: number): Promise<number> {
    const { store, clock, rules } = this.ctx;
    return store.badges.expireOffline(clock.now() - rules.lookbackDays * DAY_MS, limit);
  }
}
