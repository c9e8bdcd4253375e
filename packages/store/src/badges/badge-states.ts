import type { BadgeFields, StoredBadge } from '@bubble/protocol';
/** A user's badge state as stored, and its unfenced saves (cold starts, reads, offline delivery). */

export interface BadgeStamp {
  epoch: string;
  version: number;
  /** True when this save changed the stored state (and so bumped the version). */
  changed: boolean;
}

/** One save() of saveMany. */
export interface BadgeStateWrite {
  user: string;
  fields: BadgeFields;
  computedAt: number;
}

export interface BadgeStates {
  load(user: string): Promise<StoredBadge | null>;
  /**
   * Stores `fields` as the user's badge state. When they differ from what is stored the version
   * moves to the next one; a user with no stored state gets a fresh epoch.
   */
  save(user: string, fields: BadgeFields, computedAt: number): Promise<BadgeStamp>;
  /**
   * save() of every write, stamps in input order, in one call per pool and computedAt instead
   * of one per user (offline delivery's batches). A user written twice is saved in order.
   */
  saveMany(writes: readonly BadgeStateWrite[]): Promise<BadgeStamp[]>;
  /**
   * Deletes the stored states of users offline since `before` or earlier (docs/semantics.md,
   * Lifecycle: after BUBBLE_LOOKBACK_DAYS), looking at most `limit` users per pool: a user
   * online again is kept, a state written after `before` (a poll) ages from that write. The
   * next computation for them starts a new epoch. Returns the number of states deleted.
   */
  expireOffline(before: number, limit: number): Promise<number>;
}
