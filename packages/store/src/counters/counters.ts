/** One interaction event (docs/semantics.md, "Interaction counters"). */
export interface CounterEvent {
  user: string;
  kind: string;
  id: string;
}

/** A user's counts per kind, and the store's time they were counted at. */
export interface CounterCounts {
  /** kind → count, non-zero kinds only. */
  counts: Record<string, number>;
  /**
   * The watermark of these counts (ms on the store's clock): every event counted here is
   * stamped at or before it, every event not counted after it, so a read with `upTo` = asOf
   * clears what was counted and nothing it missed. (Redis counts three kinds per atomic step:
   * with more kinds, an event arriving between two steps may be left for the next read.) Null
   * for a user with no counter state (nothing was written for them).
   */
  asOf: number | null;
}

/**
 * Interaction counters, per user under the user's hash tag: a cursor per kind, the events of
 * each kind stamped with their arrival on the store's clock, and the retracted ids, all
 * forgotten after `windowMs` (BUBBLE_INACTIVE_DAYS). Each call is atomic per user; O(1) keys
 * written per event.
 */
export interface InteractionCounters {
  /**
   * Stores each event not stored or retracted within the window, stamped
   * max(now, the user's last stamp + 1, the kind's readAt + 1, the last count + 1). A repeated
   * or retracted one is ignored (also within the batch).
   */
  ingest(
    events: readonly CounterEvent[],
    windowMs: number,
  ): Promise<{ accepted: number; ignored: number }>;
  /** The event no longer counts, and a later ingest of it is ignored; false when not stored. */
  retract(event: CounterEvent, windowMs: number): Promise<boolean>;
  /**
   * readAt(k) := max(readAt, min(upTo, now')) for each kind, without upTo now', where now' is
   * max(now, the user's last stamp): every event stored so far.
   */
  read(user: string, kinds: readonly string[], upTo: number | undefined): Promise<void>;
  /** counter(u, k) of each kind, atomically, and the store time it is as of. */
  counts(user: string, kinds: readonly string[], windowMs: number): Promise<CounterCounts>;
  /** Forgets every event, cursor and retracted id of the users (the inactive-user job). */
  dropUsers(users: readonly string[]): Promise<void>;
}
