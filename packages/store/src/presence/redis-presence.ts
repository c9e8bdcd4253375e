import { poolOf } from '@bubble/protocol';
import type { PresenceChange, PresenceStore } from './presence.js';
import type { RedisClient } from '../redis/connect.js';
import type { RedisKeys } from '../redis/keys.js';
import type { RedisChangeLog } from '../change-log/redis-change-log.js';
import { scripts, type ScriptRunner } from '../redis/scripts.js';

export interface RedisPresenceOptions {
  client: RedisClient;
  keys: RedisKeys;
  /** The pool logs the presence events go to; its maxPoolEvents caps them. */
  log: RedisChangeLog;
}

/**
 * Presence as one sorted set per pool (user → expiry), events written by the same scripts.
 * A lapsed user stays in the set, not online, until expire() removes them and records
 * their `offline` event. Every expiry is written and compared on the server's clock (TIME in
 * the scripts): the clocks of the gateways that set presence and of the cores that expire it
 * never meet.
 */
export class RedisPresence implements PresenceStore {
  private readonly run: ScriptRunner;
  private readonly keys: RedisKeys;
  private readonly maxLen: number;

  constructor(options: RedisPresenceOptions) {
    this.run = scripts(options.client);
    this.keys = options.keys;
    this.maxLen = options.log.maxPoolEvents;
  }

  async setOnline(
    users: ReadonlyArray<{ user: string; ttlMs: number }>,
  ): Promise<PresenceChange[]> {
    const byPool = new Map<number, { indexes: number[]; pairs: (string | number)[] }>();
    users.forEach(({ user, ttlMs }, i) => {
      const pool = poolOf(user, this.keys.pools);
      let batch = byPool.get(pool);
      if (!batch) byPool.set(pool, (batch = { indexes: [], pairs: [] }));
      batch.indexes.push(i);
      batch.pairs.push(user, ttlMs);
    });
    const changes: PresenceChange[] = users.map(({ user }) => ({ user, changed: false }));
    // One script call per pool (one slot each), all issued together.
    await Promise.all(
      [...byPool].map(async ([pool, { indexes, pairs }]) => {
        const flags = await this.run.setOnline(
          [this.keys.online(pool), this.keys.poolEvents(pool), this.keys.offlineSince(pool)],
          [this.maxLen, ...pairs],
        );
        indexes.forEach((index, j) => (changes[index]!.changed = flags[j] === 1));
      }),
    );
    return changes;
  }

  async setOffline(user: string): Promise<boolean> {
    const pool = poolOf(user, this.keys.pools);
    const removed = await this.run.setOffline(
      [this.keys.online(pool), this.keys.poolEvents(pool), this.keys.offlineSince(pool)],
      [user, this.maxLen],
    );
    return removed === 1;
  }

  async isOnline(user: string): Promise<boolean> {
    const online = this.keys.online(poolOf(user, this.keys.pools));
    return (await this.run.checkOnline([online], [user])) === 1;
  }

  async expire(pool: number, limit: number): Promise<string[]> {
    if (!Number.isInteger(limit) || limit < 1) {
      throw new RangeError('limit must be a positive integer');
    }
    return this.run.expirePresence(
      [this.keys.online(pool), this.keys.poolEvents(pool), this.keys.offlineSince(pool)],
      [limit, this.maxLen],
    );
  }

  async members(pool: number): Promise<string[]> {
    return this.run.listOnline([this.keys.online(pool)], []);
  }

  async poolSizes(): Promise<number[]> {
    return Promise.all(
      Array.from({ length: this.keys.pools }, (_, pool) =>
        this.run.countOnline([this.keys.online(pool)], []),
      ),
    );
  }
}
