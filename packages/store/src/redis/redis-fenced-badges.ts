import { poolOf } from '@bubble/protocol';
import type { ChainableCommander, Cluster, Redis } from 'ioredis';
import type {
  BadgeChange,
  FencedBadges,
  FencedBadgeWrite,
  FencedSaveResult,
} from '../cluster-types.js';
import { newEpoch } from '../epoch.js';
import type { BadgeFields, BadgeStamp } from '../types.js';
import type { RedisClient } from './connect.js';
import type { RedisKeys } from './keys.js';
import { defineScripts } from './scripts.js';

export interface RedisFencedBadgesOptions {
  client: RedisClient;
  keys: RedisKeys;
  /**
   * Publish with SPUBLISH and subscribe with SSUBSCRIBE (Redis ≥ 7): on a Redis Cluster a
   * message then stays on the pool's shard instead of being broadcast to every node.
   */
  sharded: boolean;
}

type SaveReply = -1 | (string | number)[];

interface FencedBadgeScripts {
  saveBadges(numberOfKeys: number, ...keysAndArgs: (string | number)[]): Promise<SaveReply>;
  routeUsers(
    routes: string,
    gateway: string,
    expiry: number,
    now: number,
    ...users: string[]
  ): Promise<number>;
}

interface FencedBadgePipeline extends ChainableCommander {
  saveBadges(numberOfKeys: number, ...keysAndArgs: (string | number)[]): ChainableCommander;
}

/** The message saveBadges-n.lua publishes: the changes plus the writer's token, if any. */
interface WireChange extends BadgeChange {
  fence: number;
}

/**
 * Badge writes through saveBadges-n.lua: a core's fenced batches, and (unfenced) the single
 * writes of cold starts, so every change of every writer is published on its pool's channel.
 */
export class RedisFencedBadges implements FencedBadges {
  private readonly redis: RedisClient & FencedBadgeScripts;
  private readonly keys: RedisKeys;
  private readonly sharded: boolean;

  constructor(options: RedisFencedBadgesOptions) {
    defineScripts(options.client);
    this.redis = options.client as RedisClient & FencedBadgeScripts;
    this.keys = options.keys;
    this.sharded = options.sharded;
  }

  async saveFenced(
    pool: number,
    fence: number,
    writes: readonly FencedBadgeWrite[],
    computedAt: number,
  ): Promise<FencedSaveResult> {
    return this.save(pool, fence, writes, computedAt);
  }

  /** One user's state from a cold start: no lease, so no fence. */
  async saveUnfenced(user: string, fields: BadgeFields, computedAt: number): Promise<BadgeStamp> {
    const pool = poolOf(user, this.keys.pools);
    const { stamps } = await this.save(pool, '-', [{ user, fields }], computedAt);
    return stamps[0]!;
  }

  private async save(
    pool: number,
    fence: number | '-',
    writes: readonly FencedBadgeWrite[],
    computedAt: number,
  ): Promise<FencedSaveResult> {
    const badgeKeys: string[] = [];
    const perWrite: (string | number)[] = [];
    for (const { user, fields } of writes) {
      // Every key of the script must be in the pool's slot.
      if (poolOf(user, this.keys.pools) !== pool) {
        throw new RangeError(`user ${user} is not in pool ${pool}`);
      }
      badgeKeys.push(this.keys.badge(user));
      const pairs: (string | number)[] = [];
      for (const [name, value] of Object.entries(fields)) if (value !== 0) pairs.push(name, value);
      perWrite.push(user, pairs.length / 2, ...pairs);
    }
    const args: [number, ...(string | number)[]] = [
      3 + badgeKeys.length,
      this.keys.fence(pool),
      this.keys.staleWrites(pool),
      this.keys.routes(pool),
      ...badgeKeys,
      fence,
      computedAt,
      newEpoch(),
      this.keys.badgeChannel(pool),
      this.sharded ? 'SPUBLISH' : 'PUBLISH',
      this.keys.gatewayChannelPrefix(pool),
      ...perWrite,
    ];
    const result = this.redis.isCluster
      ? await this.saveInOwnPipeline(args)
      : await this.redis.saveBadges(...args);
    if (result === -1) return { accepted: false, stamps: [] };
    const stamps: FencedSaveResult['stamps'] = [];
    for (let i = 0; i < result.length; i += 3) {
      stamps.push({
        epoch: String(result[i]),
        version: Number(result[i + 1]),
        changed: result[i + 2] === 1,
      });
    }
    return { accepted: true, stamps };
  }

  /**
   * On a Cluster, auto-pipelining files a script call under the slot of its first argument,
   * which for a per-call key count is that count, not a key: saves of pools on different
   * shards would share a pipeline and fail. A pipeline of its own is routed by the real keys.
   */
  private async saveInOwnPipeline(args: [number, ...(string | number)[]]): Promise<SaveReply> {
    const pipeline = this.redis.pipeline() as FencedBadgePipeline;
    const [reply] = (await pipeline.saveBadges(...args).exec()) ?? [];
    if (!reply) throw new Error('saveBadges: the pipeline was discarded');
    const [error, result] = reply;
    if (error) throw error;
    return result as SaveReply;
  }

  async route(
    gateway: string,
    users: readonly string[],
    ttlMs: number,
    now: number,
  ): Promise<void> {
    await this.setRoutes(gateway, users, now + ttlMs, now);
  }

  async unroute(gateway: string, users: readonly string[], now: number): Promise<void> {
    await this.setRoutes(gateway, users, 0, now);
  }

  private async setRoutes(gateway: string, users: readonly string[], expiry: number, now: number) {
    if (/[=;]/.test(gateway)) throw new RangeError('a gateway id cannot contain "=" or ";"');
    const byPool = new Map<number, string[]>();
    for (const user of users) {
      const pool = poolOf(user, this.keys.pools);
      let list = byPool.get(pool);
      if (!list) byPool.set(pool, (list = []));
      list.push(user);
    }
    await Promise.all(
      [...byPool].map(([pool, list]) =>
        this.redis.routeUsers(this.keys.routes(pool), gateway, expiry, now, ...list),
      ),
    );
  }

  async subscribeGateway(
    gateway: string,
    handler: (changes: BadgeChange[]) => void,
  ): Promise<() => Promise<void>> {
    const pools = Array.from({ length: this.keys.pools }, (_, pool) => pool);
    const channels = new Set(pools.map((pool) => this.keys.gatewayChannel(pool, gateway)));
    return this.listen([...channels], (channel, message) => {
      if (channels.has(channel)) handler(decodeChanges(message));
    });
  }

  async staleWritesRejected(pool: number): Promise<number> {
    return Number((await this.redis.get(this.keys.staleWrites(pool))) ?? 0);
  }

  /**
   * Listens on a connection of its own. On a Cluster with `sharded`, ioredis' sharded
   * subscriber group keeps one connection per shard; otherwise one connection does.
   */
  async subscribe(
    pools: readonly number[],
    handler: (pool: number, changes: BadgeChange[]) => void,
  ): Promise<() => Promise<void>> {
    const poolOfChannel = new Map(pools.map((pool) => [this.keys.badgeChannel(pool), pool]));
    return this.listen([...poolOfChannel.keys()], (channel, message) => {
      const pool = poolOfChannel.get(channel);
      if (pool !== undefined) handler(pool, decodeChanges(message));
    });
  }

  /** Subscribes a connection of its own to `channels`; the returned function closes it. */
  private async listen(
    channels: string[],
    onMessage: (channel: string, message: string) => void,
  ): Promise<() => Promise<void>> {
    const subscriber = this.subscriberConnection();
    subscriber.on(this.sharded ? 'smessage' : 'message', onMessage);
    try {
      if (this.sharded) {
        // Each pool's channel hashes to its own slot; SSUBSCRIBE takes one slot per call.
        await Promise.all(channels.map((channel) => subscriber.ssubscribe(channel)));
      } else if (channels.length > 0) {
        await subscriber.subscribe(...channels);
      }
    } catch (error) {
      subscriber.disconnect();
      throw error;
    }
    let closing: Promise<void> | undefined;
    return () =>
      (closing ??= subscriber.quit().then(
        () => undefined,
        () => subscriber.disconnect(),
      ));
  }

  /** Auto-pipelining is off: it would batch SSUBSCRIBE onto a command connection. */
  private subscriberConnection(): Redis | Cluster {
    if (this.redis.isCluster) {
      return (this.redis as Cluster).duplicate([], {
        enableAutoPipelining: false,
        shardedSubscribers: this.sharded,
      });
    }
    return (this.redis as Redis).duplicate({ enableAutoPipelining: false });
  }
}

function decodeChanges(message: string): BadgeChange[] {
  const changes = JSON.parse(message) as WireChange[];
  return changes.map(({ user, epoch, version, fields, computedAt }) => ({
    user,
    epoch,
    version,
    fields,
    computedAt,
  }));
}
