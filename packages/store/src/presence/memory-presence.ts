import { poolOf } from '@bubble/protocol';
import type { PresenceChange, PresenceStore } from './presence.js';
import type { MemoryChangeLog } from '../change-log/memory-change-log.js';

export interface MemoryPresenceOptions {
  pools: number;
  /** Where the online/offline events of each pool are recorded. */
  log: MemoryChangeLog;
  /** The store's clock, which expiries are set and checked on; default Date.now. */
  now?: () => number;
  /**
   * user → when their stored badge state started to age: set when they go offline, cleared when
   * they come online (the Redis engine's offline index, expireBadgeStates-3.lua).
   */
  offlineSince?: Map<string, number>;
}

/**
 * Who is online, per pool, with presence expiries. A user whose expiry passed stays listed
 * (but not online) until expire() removes them and records their `offline` event, as in Redis.
 */
export class MemoryPresence implements PresenceStore {
  private readonly pools: number;
  private readonly log: MemoryChangeLog;
  private readonly now: () => number;
  /** expiries[pool]: user → the time their presence lapses (ms). */
  private readonly expiries: Map<string, number>[];
  private readonly offlineSince: Map<string, number>;

  constructor(options: MemoryPresenceOptions) {
    if (!Number.isInteger(options.pools) || options.pools < 1) {
      throw new RangeError('pools must be a positive integer');
    }
    this.pools = options.pools;
    this.log = options.log;
    this.now = options.now ?? Date.now;
    this.offlineSince = options.offlineSince ?? new Map();
    this.expiries = Array.from({ length: options.pools }, () => new Map<string, number>());
  }

  async setOnline(
    users: ReadonlyArray<{ user: string; ttlMs: number }>,
  ): Promise<PresenceChange[]> {
    const now = this.now();
    return users.map(({ user, ttlMs }) => {
      const pool = poolOf(user, this.pools);
      const expiries = this.expiries[pool]!;
      const previous = expiries.get(user);
      // Never shortens a later expiry: several gateways may hold the user, each with its TTL.
      if (previous === undefined || previous < now + ttlMs) expiries.set(user, now + ttlMs);
      const changed = previous === undefined || previous <= now;
      if (changed) {
        this.offlineSince.delete(user);
        this.log.appendPoolEventsNow(pool, [{ kind: 'online', user }]);
      }
      return { user, changed };
    });
  }

  async setOffline(user: string): Promise<boolean> {
    const pool = poolOf(user, this.pools);
    // A lapsed user not yet expired still owes their offline event: record it here instead.
    if (!this.expiries[pool]!.delete(user)) return false;
    this.offlineSince.set(user, this.now());
    this.log.appendPoolEventsNow(pool, [{ kind: 'offline', user }]);
    return true;
  }

  async isOnline(user: string): Promise<boolean> {
    return this.isOnlineNow(user);
  }

  isOnlineNow(user: string): boolean {
    return (this.expiries[poolOf(user, this.pools)]!.get(user) ?? -Infinity) > this.now();
  }

  /** Whether the pool's presence still lists the user (online, or lapsed and not expired). */
  holds(user: string): boolean {
    return this.expiries[poolOf(user, this.pools)]!.has(user);
  }

  async expire(pool: number, limit: number): Promise<string[]> {
    if (!Number.isInteger(limit) || limit < 1) {
      throw new RangeError('limit must be a positive integer');
    }
    const expiries = this.expiries[pool];
    if (!expiries) return [];
    const now = this.now();
    const lapsed: Array<[string, number]> = [];
    for (const entry of expiries) if (entry[1] <= now) lapsed.push(entry);
    // Earliest expiry first, then by user: the order of a Redis sorted set.
    lapsed.sort(([userA, a], [userB, b]) => a - b || (userA < userB ? -1 : userA > userB ? 1 : 0));
    const removed = lapsed.slice(0, limit).map(([user]) => user);
    for (const user of removed) {
      expiries.delete(user);
      this.offlineSince.set(user, now);
    }
    this.log.appendPoolEventsNow(
      pool,
      removed.map((user) => ({ kind: 'offline', user })),
    );
    return removed;
  }

  async members(pool: number): Promise<string[]> {
    const now = this.now();
    const members: string[] = [];
    for (const [user, expiry] of this.expiries[pool] ?? []) if (expiry > now) members.push(user);
    return members;
  }

  async poolSizes(): Promise<number[]> {
    const now = this.now();
    return this.expiries.map((expiries) => {
      let size = 0;
      for (const expiry of expiries.values()) if (expiry > now) size++;
      return size;
    });
  }
}
