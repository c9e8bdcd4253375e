import { usersByPool } from '@bubble/protocol';
import type { RedisClient } from '../redis/connect.js';
import type { RedisKeys } from '../redis/keys.js';
import { scripts, type ScriptRunner } from '../redis/scripts.js';

/**
 * Which gateways hold which users: each pool's routes hash (user → "gateway=expiry;…"), read
 * by saveBadges-8.lua to send a change to the gateways holding its user.
 */
export class RedisBadgeRoutes {
  private readonly run: ScriptRunner;

  constructor(
    client: RedisClient,
    private readonly keys: RedisKeys,
  ) {
    this.run = scripts(client);
  }

  /** Routes hold for `ttlMs` from the server's now: routeUsers-1.lua reads its clock. */
  async route(gateway: string, users: readonly string[], ttlMs: number): Promise<void> {
    await this.setRoutes(gateway, users, ttlMs);
  }

  /** Returns the users no gateway holds any more. */
  async unroute(gateway: string, users: readonly string[]): Promise<string[]> {
    return this.setRoutes(gateway, users, 0);
  }

  /** One script call per pool (ttl 0 removes); returns the users no gateway holds any more. */
  private async setRoutes(
    gateway: string,
    users: readonly string[],
    ttlMs: number,
  ): Promise<string[]> {
    if (/[=;]/.test(gateway)) throw new RangeError('a gateway id cannot contain "=" or ";"');
    const byPool = usersByPool(users, this.keys.pools);
    const flags = await Promise.all(
      [...byPool].map(([pool, list]) =>
        this.run.routeUsers([this.keys.routes(pool)], [gateway, ttlMs, ...list]),
      ),
    );
    const orphaned: string[] = [];
    [...byPool.values()].forEach((list, i) =>
      list.forEach((user, k) => {
        if (flags[i]![k] === 0) orphaned.push(user);
      }),
    );
    return orphaned;
  }
}
