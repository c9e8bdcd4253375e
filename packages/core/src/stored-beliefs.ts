import { FEED_FIELD, extraFieldsOf, poolOf, type StoredBadge } from '@bubble/protocol';
import type { KnownBadge } from '@bubble/store';
import type { ExtrasTracker } from './extras-tracker.js';
import type { FeedCounter } from './feed-counter.js';
import { growInt32 } from './intern-table.js';

/**
 * What a core believes is stored for each user it holds: the badge state (epoch and version),
 * the feed count (kept by the counter as its reported count) and the extra fields (kept by the
 * extras tracker). A user whose stored counts equal the held ones is not written.
 *
 * Indexed by the counter's user id, as is the user's pool: the write-back looks both up for
 * every changed user of every sweep.
 */
export class StoredBeliefs {
  /**
   * Each held user's badge state as we last loaded or stored it (version 0: none is; -1:
   * unknown), updated in place by every save. Writes that carry it go in blind: the store
   * checks only users another writer may have changed (see saveBadges-8.lua), so a belief is
   * never set from anything else, and is made unknown when a gateway wrote the user.
   */
  private readonly known: (KnownBadge | undefined)[] = [];
  /** Each user's pool + 1, set by their load; 0 for a user whose load has not completed. */
  private poolById = new Int32Array(0);

  constructor(
    private readonly counter: FeedCounter,
    private readonly extras: ExtrasTracker,
    private readonly pools: number,
  ) {}

  knownAt(id: number): KnownBadge | undefined {
    return this.known[id];
  }

  /**
   * The pool a held user's badge is written under. A user the counter knows whose load failed
   * (a Redis timeout midway) has none recorded: their pool is computed, never taken as pool 0.
   */
  poolAt(id: number): number {
    const recorded = this.poolById[id] ?? 0;
    return recorded > 0 ? recorded - 1 : poolOf(this.counter.users.nameOf(id), this.pools);
  }

  /**
   * Believes what a load of the user found: their stored badge, or nothing stored, or (when a
   * gateway wrote them while they loaded) unknown.
   */
  loaded(id: number, user: string, stored: StoredBadge | null, writtenMeanwhile: boolean): void {
    this.poolById = growInt32(this.poolById, id + 1);
    this.poolById[id] = poolOf(user, this.pools) + 1;
    if (writtenMeanwhile) {
      // The loaded badge may predate the gateway's write: decided by the store (version -1).
      this.forgetStored(id, user, { epoch: '', version: -1 });
    } else if (!stored) {
      // Written next sweep, as the first version of a fresh epoch.
      this.forgetStored(id, user, { epoch: '', version: 0 });
    } else {
      this.counter.markReported(user, stored.fields[FEED_FIELD] ?? 0);
      this.extras.markReported(user, extraFieldsOf(stored.fields));
      this.known[id] = { epoch: stored.epoch, version: stored.version };
    }
  }

  /**
   * Forgets what we believe is stored for the user, so the next sweep writes their badge again.
   * The belief becomes `replacement` or else unknown (version -1, set in place: the store keeps
   * updating the same object), which makes that write decided: the store compares it with what
   * is stored, and equal counts change nothing, not even the version.
   */
  forgetStored(id: number, user: string, replacement?: KnownBadge): void {
    this.counter.markReported(user, -1);
    this.extras.markReported(user, null);
    if (replacement) this.known[id] = replacement;
    else {
      const known = this.known[id];
      if (known) known.version = -1;
    }
  }

  /**
   * The user is no longer held: nothing of theirs is kept (the counter's follower lists let
   * them go over the next sweeps, FeedCounter.reclaim).
   */
  release(user: string): void {
    const id = this.counter.users.idOf(user);
    if (id !== undefined) this.known[id] = undefined;
    this.counter.releaseUser(user);
    this.extras.removeUser(user);
  }
}
