export interface PresenceChange {
  user: string;
  /** The user was offline (or lapsed) before this call made them online, or vice versa. */
  changed: boolean;
}

/**
 * Who is online. Every time here is the store's own (BubbleStore.clock; Redis TIME in the
 * scripts): a gateway sets a TTL, never an expiry, so the clocks of the hosts that set presence
 * and of those that expire it never meet.
 */
export interface PresenceStore {
  /**
   * Online for `ttlMs` from the store's now (renewing extends it; a later expiry is kept).
   * Records an `online` pool event for each user who was not online before. Returns one entry
   * per user, in input order.
   */
  setOnline(users: ReadonlyArray<{ user: string; ttlMs: number }>): Promise<PresenceChange[]>;
  /** Offline now; records an `offline` pool event when the user was online. */
  setOffline(user: string): Promise<boolean>;
  isOnline(user: string): Promise<boolean>;
  /**
   * Removes up to `limit` users of `pool` whose presence lapsed at or before the store's now,
   * recording an `offline` event for each, and returns them.
   */
  expire(pool: number, limit: number): Promise<string[]>;
  /** Users of `pool` online now. */
  members(pool: number): Promise<string[]>;
  /** Online users per pool now (index = pool). */
  poolSizes(): Promise<number[]>;
}
