import { poolOf, type BadgeFields, type StoredBadge, decodeBadgeState } from '@bubble/protocol';
import type { RedisFencedBadges } from '../fenced-badges/redis-fenced-badges.js';
import type { RedisClient } from '../redis/connect.js';
import type { RedisKeys } from '../redis/keys.js';
import type { ScriptRunner } from '../redis/scripts.js';
import type { BadgeStamp, BadgeStateWrite, BadgeStates } from './badge-states.js';

export class RedisBadgeStates implements BadgeStates {
  constructor(
    private readonly redis: RedisClient,
    private readonly run: ScriptRunner,
    private readonly keys: RedisKeys,
    private readonly writer: RedisFencedBadges,
  ) {}

  async load(user: string): Promise<StoredBadge | null> {
    const packed = await this.redis.hget(this.keys.badgeOf(user), user);
    return packed === null ? null : decodeBadgeState(packed);
  }

  async save(user: string, fields: BadgeFields, computedAt: number): Promise<BadgeStamp> {
    const stamp = await this.writer.saveUnfenced(user, fields, computedAt);
    // Ages from now unless it already does, or the user is online (going offline writes it).
    const pool = poolOf(user, this.keys.pools);
    await this.run.ageBadgeState(
      [this.keys.offlineSince(pool), this.keys.online(pool)],
      [user, computedAt],
    );
    return stamp;
  }

  /**
   * Per pool and computedAt, one saveBadges-8 call of all its users (decided by the script, as
   * save() is) and one ageBadgeStates-2 call: every key of each in the pool's slot.
   */
  async saveMany(writes: readonly BadgeStateWrite[]): Promise<BadgeStamp[]> {
    const stamps: BadgeStamp[] = new Array(writes.length);
    // A user written again goes in a later round, so each call names a user once.
    const rounds: Map<string, { pool: number; computedAt: number; at: number[] }>[] = [];
    const roundOf = new Map<string, number>();
    writes.forEach((write, i) => {
      const round = roundOf.get(write.user) ?? 0;
      roundOf.set(write.user, round + 1);
      const byGroup = (rounds[round] ??= new Map());
      const pool = poolOf(write.user, this.keys.pools);
      const key = `${pool}|${write.computedAt}`;
      let group = byGroup.get(key);
      if (!group) byGroup.set(key, (group = { pool, computedAt: write.computedAt, at: [] }));
      group.at.push(i);
    });
    for (const byGroup of rounds) {
      await Promise.all(
        [...byGroup.values()].map(async ({ pool, computedAt, at }) => {
          const users = at.map((i) => writes[i]!.user);
          const saved = await this.writer.saveUnfencedMany(
            pool,
            at.map((i) => writes[i]!),
            computedAt,
          );
          at.forEach((i, k) => (stamps[i] = saved[k]!));
          await this.run.ageBadgeStates(
            [this.keys.offlineSince(pool), this.keys.online(pool)],
            [computedAt, ...users],
          );
        }),
      );
    }
    return stamps;
  }

  async expireOffline(before: number, limit: number): Promise<number> {
    const { keys } = this;
    const expired = await Promise.all(
      Array.from({ length: keys.pools }, (_, pool) =>
        this.run.expireBadgeStates(
          [keys.offlineSince(pool), keys.online(pool), keys.badges(pool)],
          [before, limit],
        ),
      ),
    );
    return expired.reduce((sum, n) => sum + n, 0);
  }
}
