import type { CursorMove } from '../cursors/read-cursors.js';

/** What a user's notices and red dots are counted from. */
export interface UserMarksState {
  /** The notice cursor, null while the user was never seen. */
  seen: number | null;
  /** Red dot name → when the user last clicked it. */
  clicks: Record<string, number>;
}

/**
 * Per-user state with the "inactive user" lifecycle: the notice cursor, red-dot clicks and the
 * last sight. Dropped for users unseen for BUBBLE_INACTIVE_DAYS; the next visit starts afresh.
 */
export interface UserMarks {
  /**
   * An end-user call saw `user` at `now`: the first sight sets the notice cursor to the highest
   * notice id published so far, and appends a `marks` event to the user's pool log (on Redis
   * after the script; a later sight appends it when that append failed). Returns the cursor,
   * and whether this call started it.
   */
  see(
    user: string,
    now: number,
    highestNoticeId: () => Promise<number>,
  ): Promise<{ seen: number; first: boolean }>;
  state(user: string): Promise<UserMarksState>;
  /** seen := max(seen, to); returns the cursor after the move. */
  advanceSeen(user: string, to: number): Promise<number>;
  /**
   * advanceSeen of each move as one batch (not a round trip per user); the cursors after the
   * moves, in input order. Not a sight: no last sight is recorded, no `marks` event appended.
   */
  advanceSeenOfMany(moves: readonly CursorMove[]): Promise<number[]>;
  /** clicked(user, name) := at. */
  click(user: string, names: readonly string[], at: number): Promise<void>;
  /**
   * Drops the marks of at most `limit` users last seen before `before`, and with them every
   * other state kept for them alone but their memberships and conversation cursors (their feed
   * cursor, badge state, and with a sources endpoint their follows and topic follows;
   * RedisKeys.inactiveUserKeys): their
   * next visit starts afresh. A user seen again in between is kept; so is a user online through
   * presence at that time, who counts as seen at `now`. Appends a `marks` event for each user dropped, before the last-seen index
   * forgets them, so a run that failed in between drops and logs them again. Returns the users
   * dropped.
   */
  dropInactive(before: number, limit: number, now: number): Promise<string[]>;
}

/** A user's last sight is written at most this often (the inactive-user job counts in days). */
export const SIGHT_THROTTLE_MS = 3_600_000;
