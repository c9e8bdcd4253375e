import type { BadgeFields, StoredBadge } from '@bubble/protocol';
import type { MemoryFencedBadges } from '../fenced-badges/memory-fenced-badges.js';
import type { MemoryPresence } from '../presence/memory-presence.js';
import type { BadgeStamp, BadgeStateWrite, BadgeStates } from './badge-states.js';

export class MemoryBadgeStates implements BadgeStates {
  constructor(
    private readonly byUser: Map<string, StoredBadge>,
    private readonly writer: MemoryFencedBadges,
    private readonly offlineSince: Map<string, number>,
    private readonly presence: MemoryPresence,
  ) {}

  async expireOffline(before: number, limit: number): Promise<number> {
    // Oldest first, ties by name, at most `limit` looked at: the Redis engine's walk, one index.
    const due = [...this.offlineSince]
      .filter(([, since]) => since <= before)
      .sort((a, b) => a[1] - b[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
      .slice(0, limit);
    let expired = 0;
    for (const [user] of due) {
      if (this.presence.isOnlineNow(user)) {
        this.offlineSince.delete(user);
        continue;
      }
      const stored = this.byUser.get(user);
      if (stored && stored.computedAt > before) {
        this.offlineSince.set(user, stored.computedAt);
        continue;
      }
      if (stored) expired++;
      this.byUser.delete(user);
      this.offlineSince.delete(user);
    }
    return expired;
  }

  async load(user: string): Promise<StoredBadge | null> {
    const stored = this.byUser.get(user);
    return stored ? { ...stored, fields: { ...stored.fields } } : null;
  }

  async save(user: string, fields: BadgeFields, computedAt: number): Promise<BadgeStamp> {
    const stamp = await this.writer.saveUnfenced(user, fields, computedAt);
    // Ages from now unless it already does, or the user is online (going offline writes it).
    if (!this.offlineSince.has(user) && !this.presence.isOnlineNow(user)) {
      this.offlineSince.set(user, computedAt);
    }
    return stamp;
  }

  async saveMany(writes: readonly BadgeStateWrite[]): Promise<BadgeStamp[]> {
    const stamps: BadgeStamp[] = [];
    for (const { user, fields, computedAt } of writes) {
      stamps.push(await this.save(user, fields, computedAt));
    }
    return stamps;
  }
}
