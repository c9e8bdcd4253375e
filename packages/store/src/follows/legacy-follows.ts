import { Cluster, type Redis } from 'ioredis';
import type { RedisClient } from '../redis/connect.js';
import type { RedisKeys } from '../redis/keys.js';
import type { ScriptRunner } from '../redis/scripts.js';

export interface LegacyConversionStep {
  /** Format-1 SETs converted by this step (a user's follows and topics count one each). */
  converted: number;
  /** True once every server was scanned to its end: nothing of format 1 is left. */
  done: boolean;
}

/**
 * Turns format-1 follow SETs (`{u:<user>}:follows`, `:topics`) into format-2 lists (RedisKeys'
 * header), a step at a time: each step SCANs one page of one server (each master of a Redis
 * Cluster in turn) and converts the users found, each user in one script (convertLegacyFollows-4).
 * Scanning again after `done` finds nothing to convert, so an operator may run it twice.
 */
export class LegacyFollowsConversion {
  private servers: Redis[] | undefined;
  private server = 0;
  private cursor = '0';

  constructor(
    private readonly client: RedisClient,
    private readonly run: ScriptRunner,
    private readonly keys: RedisKeys,
  ) {}

  async step(batch: number): Promise<LegacyConversionStep> {
    if (!Number.isInteger(batch) || batch < 1) throw new Error('batch must be a positive integer');
    const { client, keys } = this;
    this.servers ??= client instanceof Cluster ? client.nodes('master') : [client];
    const server = this.servers[this.server];
    if (!server) return { converted: 0, done: true };
    const [next, found] = await server.scan(
      this.cursor,
      'MATCH',
      keys.userTaggedPattern(),
      'COUNT',
      batch,
      'TYPE',
      'set',
    );
    const users = new Set<string>();
    for (const key of found) {
      const user = keys.legacyListOwner(key);
      if (user !== null) users.add(user);
    }
    const counts = await Promise.all(
      [...users].map((user) =>
        this.run.convertLegacyFollows(
          [
            keys.legacyFollows(user),
            keys.legacyTopics(user),
            keys.follows(user),
            keys.topics(user),
          ],
          [],
        ),
      ),
    );
    if (next === '0') this.server += 1;
    this.cursor = next;
    const converted = counts.reduce((sum, count) => sum + count, 0);
    return { converted, done: this.server >= this.servers.length };
  }
}
