import { poolOf } from '@bubble/protocol';
import type { Cluster, Redis } from 'ioredis';
import type {
  BadgeChange,
  FencedBadges,
  FencedBadgeWrite,
  FencedSaveResult,
} from '../cluster-types.js';
import { newEpoch } from '../epoch.js';
import type { BadgeFields, BadgeStamp, StoredBadge } from '../types.js';
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

type SaveReply = -1 | string;

interface FencedBadgeScripts {
  saveBadges(
    fence: string,
    stale: string,
    routes: string,
    badges: string,
    ...args: (string | number)[]
  ): Promise<SaveReply>;
  routeUsers(
    routes: string,
    gateway: string,
    expiry: number,
    now: number,
    ...users: string[]
  ): Promise<number[]>;
}

/**
 * Badge writes through saveBadges-4.lua: a core's fenced batches, and (unfenced) the single
 * writes of cold starts and reads. Unfenced changes are published on their pool's channel (what
 * the owning core listens to); every change goes to the gateways holding its user.
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
    const args: (string | number)[] = [
      fence,
      computedAt,
      newEpoch(),
      this.keys.badgeChannel(pool),
      this.sharded ? 'SPUBLISH' : 'PUBLISH',
      this.keys.gatewayChannelPrefix(pool),
      this.keys.writtenChannel(pool),
    ];
    let lines = '';
    for (const { user, fields } of writes) {
      // Every key of the script must be in the pool's slot.
      if (poolOf(user, this.keys.pools) !== pool) {
        throw new RangeError(`user ${user} is not in pool ${pool}`);
      }
      lines +=
        lines === '' ? `${user} ${encodeCounts(fields)}` : `\n${user} ${encodeCounts(fields)}`;
    }
    args.push(lines);
    const { keys } = this;
    const result = await this.redis.saveBadges(
      keys.fence(pool),
      keys.staleWrites(pool),
      keys.routes(pool),
      keys.badges(pool),
      ...args,
    );
    if (result === -1) return { accepted: false, changed: 0, stamps: [] };
    return stampsOf(result, writes.length);
  }

  async route(
    gateway: string,
    users: readonly string[],
    ttlMs: number,
    now: number,
  ): Promise<void> {
    await this.setRoutes(gateway, users, now + ttlMs, now);
  }

  async unroute(gateway: string, users: readonly string[], now: number): Promise<string[]> {
    return this.setRoutes(gateway, users, 0, now);
  }

  /** Returns the users no gateway holds any more. */
  private async setRoutes(
    gateway: string,
    users: readonly string[],
    expiry: number,
    now: number,
  ): Promise<string[]> {
    if (/[=;]/.test(gateway)) throw new RangeError('a gateway id cannot contain "=" or ";"');
    const byPool = new Map<number, string[]>();
    for (const user of users) {
      const pool = poolOf(user, this.keys.pools);
      let list = byPool.get(pool);
      if (!list) byPool.set(pool, (list = []));
      list.push(user);
    }
    const flags = await Promise.all(
      [...byPool].map(([pool, list]) =>
        this.redis.routeUsers(this.keys.routes(pool), gateway, expiry, now, ...list),
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

/**
 * The script's answer: the number of changes on its first line, then "<epoch>|<version>|<changed>"
 * per write, parsed only when asked for (a core's batch of a thousand never needs the stamps).
 */
function stampsOf(reply: string, writes: number): FencedSaveResult {
  const firstLine = reply.indexOf('\n');
  let stamps: FencedSaveResult['stamps'] | undefined;
  return {
    accepted: true,
    changed: Number(firstLine === -1 ? reply : reply.slice(0, firstLine)),
    get stamps() {
      stamps ??= (writes === 0 ? [] : reply.slice(firstLine + 1).split('\n')).map((line) => {
        const [epoch, version, flag] = line.split('|');
        return { epoch: epoch!, version: Number(version), changed: flag === '1' };
      });
      return stamps;
    },
  };
}

/**
 * A badge state's counts as stored: "name=value,…", non-zero only, sorted by name, so two
 * states with equal counts have equal text (the script compares text). Names are ids or
 * prefixed ids (docs/redis-keys.md) and never hold "=", "," or "|".
 */
export function encodeCounts(fields: Readonly<Record<string, number>>): string {
  const names = Object.keys(fields);
  if (names.length === 1) {
    const value = fields[names[0]!]!;
    return value === 0 ? '' : `${names[0]}=${value}`;
  }
  names.sort();
  let text = '';
  for (const name of names) {
    const value = fields[name]!;
    if (value === 0) continue;
    text += text === '' ? `${name}=${value}` : `,${name}=${value}`;
  }
  return text;
}

export function decodeCounts(text: string): Record<string, number> {
  const fields: Record<string, number> = {};
  if (text === '') return fields;
  for (const pair of text.split(',')) {
    const at = pair.indexOf('=');
    fields[pair.slice(0, at)] = Number(pair.slice(at + 1));
  }
  return fields;
}

/** A stored state: "<epoch>|<version>|<computedAt>|<counts>". */
export function decodeBadgeState(packed: string): StoredBadge {
  const [epoch, version, computedAt, counts] = packed.split('|');
  return {
    epoch: epoch!,
    version: Number(version),
    computedAt: Number(computedAt),
    fields: decodeCounts(counts ?? ''),
  };
}

/**
 * A published message: the writer's fencing token (or "-") on the first line, then one
 * "<user>|<packed state>" line per change.
 */
export function decodeChanges(message: string): BadgeChange[] {
  const lines = message.split('\n');
  const changes: BadgeChange[] = new Array(lines.length - 1);
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!;
    const bar = line.indexOf('|');
    changes[i - 1] = { user: line.slice(0, bar), ...decodeBadgeState(line.slice(bar + 1)) };
  }
  return changes;
}
