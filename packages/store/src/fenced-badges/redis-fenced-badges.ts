import {
  poolOf,
  type BadgeChange,
  type BadgeChangeReader,
  type BadgeFields,
  newEpoch,
} from '@bubble/protocol';
import { PackedStateWriter, packedStateBound } from './packed-state-writer.js';
import type { BadgeStamp } from '../badges/badge-states.js';
import type { CommandCounter } from '../redis/command-counter.js';
import type { RedisClient } from '../redis/connect.js';
import { sendEncodedScript } from '../redis/ioredis-internals.js';
import type { RedisKeys } from '../redis/keys.js';
import {
  CR,
  EncodingSlab,
  FRAMING_BOUND,
  LF,
  bulkStringBound,
  endBulkString,
  writeArrayHeader,
  writeBulkNumber,
  writeBulkString,
  writeLengthPrefix,
} from '../redis/resp-writer.js';
import { scriptSource } from '../redis/scripts.js';
import type {
  FencedBadges,
  FencedBadgeWrite,
  FencedSaveOptions,
  FencedSaveResult,
  KnownBadge,
  MissedMessages,
} from './fenced-badges.js';
import { RedisBadgeRoutes } from './redis-badge-routes.js';
import { RedisBadgeSubscriptions } from './redis-badge-subscriptions.js';
import { RedisListSignals } from './redis-list-signals.js';
import { readSaveReply } from './save-reply.js';

export interface RedisFencedBadgesOptions {
  client: RedisClient;
  keys: RedisKeys;
  /**
   * Publish with SPUBLISH and subscribe with SSUBSCRIBE (Redis ≥ 7): on a Redis Cluster a
   * message then stays on the pool's shard instead of being broadcast to every node.
   */
  sharded: boolean;
  /** Counts the commands of the connections opened here (subscriptions) with the store's. */
  commands?: CommandCounter;
}

const SAVE_SCRIPT = scriptSource('saveBadges');

/**
 * Badge writes through saveBadges-8.lua: a core's fenced batches, and (unfenced) the single
 * writes of cold starts and reads. Unfenced changes are published on their pool's channel (what
 * the owning core listens to); every change goes to the gateways holding its user. Routes,
 * subscriptions and list signals are their own classes, reached through this one's interface.
 */
export class RedisFencedBadges implements FencedBadges {
  private readonly redis: RedisClient;
  private readonly keys: RedisKeys;
  private readonly sharded: boolean;
  private readonly routes: RedisBadgeRoutes;
  private readonly lists: RedisListSignals;
  private readonly subscriptions: RedisBadgeSubscriptions;
  private readonly slab = new EncodingSlab();
  private readonly state = new PackedStateWriter();

  constructor(options: RedisFencedBadgesOptions) {
    this.redis = options.client;
    this.keys = options.keys;
    this.sharded = options.sharded;
    this.routes = new RedisBadgeRoutes(options.client, options.keys);
    const { client, keys, sharded, commands } = options;
    this.lists = new RedisListSignals(client, keys, sharded, commands);
    this.subscriptions = new RedisBadgeSubscriptions(client, keys, sharded, commands);
  }

  saveFenced(
    pool: number,
    fence: number,
    writes: readonly FencedBadgeWrite[],
    computedAt: number,
    options: FencedSaveOptions = {},
  ): Promise<FencedSaveResult> {
    return this.save(pool, fence, writes, computedAt, options.seenLog ?? '', options.stamps);
  }

  /** One user's state from a cold start: no lease, so no fence. */
  async saveUnfenced(user: string, fields: BadgeFields, computedAt: number): Promise<BadgeStamp> {
    const pool = poolOf(user, this.keys.pools);
    const { stamps } = await this.save(pool, '-', [{ user, fields }], computedAt, '', true);
    return stamps![0]!;
  }

  /** Cold-start states of users of one pool in one call, stamps in input order. */
  async saveUnfencedMany(
    pool: number,
    writes: readonly { user: string; fields: BadgeFields }[],
    computedAt: number,
  ): Promise<BadgeStamp[]> {
    const { stamps } = await this.save(pool, '-', writes, computedAt, '', true);
    return stamps!;
  }

  /**
   * A write whose writer believes it knows the stored state goes in blind (the script stores its
   * proposal unless another writer touched the user since); the others go first, in the segment
   * the script decides. The whole EVALSHA command is encoded here, byte by byte, each user and
   * state an argument of its own: no string per user is made (a core's sweep encodes a hundred
   * thousand; the strings were most of what it allocated), and the script gets its HSET
   * arguments without splitting a string. Only the beliefs are kept while the call is in
   * flight: `writes` may be reused by the caller once this returns.
   */
  private save(
    pool: number,
    fence: number | '-',
    writes: readonly FencedBadgeWrite[],
    computedAt: number,
    seenLog: string,
    withStamps = false,
  ): Promise<FencedSaveResult> {
    const n = writes.length;
    if (n === 0) {
      return Promise.resolve({ accepted: true, changed: 0, ...(withStamps && { stamps: [] }) });
    }
    const epoch = newEpoch();
    const stamp = String(computedAt);
    let decided = 0;
    let bound = 0;
    for (let i = 0; i < n; i++) {
      const { user, fields, known, computedAt: own } = writes[i]!;
      // Every key of the script must be in the pool's slot.
      if (poolOf(user, this.keys.pools) !== pool) {
        return Promise.reject(new RangeError(`user ${user} is not in pool ${pool}`));
      }
      if (known === undefined || known.version < 0) decided++;
      // The state takes the fresh epoch or the known one.
      const epochs = epoch.length + (known?.epoch.length ?? 0);
      const at = own === undefined ? stamp : String(own);
      bound += bulkStringBound(user) + FRAMING_BOUND + packedStateBound(epochs, at, fields);
    }
    const { keys } = this;
    const keyArgs = [
      keys.fence(pool),
      keys.staleWrites(pool),
      keys.routes(pool),
      keys.badges(pool),
      keys.touched(pool),
      keys.online(pool),
      keys.poolEvents(pool),
      keys.sentToGateways(pool),
    ];
    const head = [
      ...keyArgs,
      String(fence),
      stamp,
      epoch,
      keys.badgeChannel(pool),
      this.sharded ? 'SPUBLISH' : 'PUBLISH',
      keys.gatewayChannelPrefix(pool),
      keys.writtenChannel(pool),
      String(decided),
      seenLog,
    ];
    // The array header, EVALSHA, the sha and the key count, then the head.
    bound += 2 * FRAMING_BOUND + bulkStringBound('EVALSHA') + bulkStringBound(SAVE_SCRIPT.sha);
    for (const arg of head) bound += bulkStringBound(arg);
    // A gateway's single writes use Node's buffer pool; a core's batches the slab.
    const room = fence === '-' ? Buffer.allocUnsafe(bound) : this.slab.reserve(bound);
    let pos = writeArrayHeader(room, 0, 3 + head.length + 2 * n);
    pos = writeBulkString(room, pos, 'EVALSHA');
    pos = writeBulkString(room, pos, SAVE_SCRIPT.sha);
    const bodyAt = pos;
    pos = writeBulkNumber(room, pos, keyArgs.length);
    for (const arg of head) pos = writeBulkString(room, pos, arg);
    // Script order (decided first) → write index: only stamps, in input order, need it.
    const order = withStamps ? new Int32Array(n) : null;
    const beliefs: (KnownBadge | undefined)[] = new Array(n);
    const { state } = this;
    let at = 0;
    for (const blindPass of [false, true]) {
      for (let i = 0; i < n; i++) {
        const { user, fields, known, computedAt: own } = writes[i]!;
        const blind = known !== undefined && known.version >= 0;
        if (blind !== blindPass) continue;
        pos = writeBulkString(room, pos, user);
        // A decided write's state is only read for its counts, and a blind version 0 is a
        // fresh epoch's first.
        const next = blind && known.version > 0;
        const length = state.measure(
          next ? known.epoch : epoch,
          next ? known.version + 1 : 1,
          own === undefined ? stamp : String(own),
          fields,
        );
        const start = pos;
        pos = writeLengthPrefix(room, pos, length);
        const end = state.write(room, pos);
        if (end - pos === length) {
          room[end] = CR;
          room[end + 1] = LF;
          pos = end + 2;
        } else {
          pos = endBulkString(room, start, pos, end, length);
        }
        if (order) order[at] = i;
        beliefs[at++] = known;
      }
    }
    const saved = sendEncodedScript(
      this.redis,
      SAVE_SCRIPT,
      keyArgs,
      room.subarray(0, pos),
      bodyAt,
    ).then((reply) => readSaveReply(reply, beliefs, order, epoch, decided));
    return fence === '-' ? saved : this.slab.claim(pos, saved);
  }

  route(gateway: string, users: readonly string[], ttlMs: number): Promise<void> {
    return this.routes.route(gateway, users, ttlMs);
  }

  unroute(gateway: string, users: readonly string[]): Promise<string[]> {
    return this.routes.unroute(gateway, users);
  }

  subscribeGateway(
    gateway: string,
    handler: (changes: BadgeChangeReader) => void,
    missed?: MissedMessages,
  ): Promise<() => Promise<void>> {
    return this.subscriptions.subscribeGateway(gateway, handler, missed);
  }

  signalLists(users: readonly string[]): Promise<void> {
    return this.lists.signalLists(users);
  }

  subscribeListSignals(
    gateway: string,
    handler: (users: string[]) => void,
    onLost?: () => void,
  ): Promise<() => Promise<void>> {
    return this.lists.subscribeListSignals(gateway, handler, onLost);
  }

  forgetGateways(live: ReadonlySet<string>): Promise<number> {
    return this.subscriptions.forgetGateways(live);
  }

  storedStates(users: readonly string[]): Promise<BadgeChange[]> {
    return this.subscriptions.storedStates(users);
  }

  subscribe(
    pools: readonly number[],
    handler: (pool: number, changes: BadgeChange[]) => void,
  ): Promise<() => Promise<void>> {
    return this.subscriptions.subscribe(pools, handler);
  }

  async staleWritesRejected(pool: number): Promise<number> {
    return Number((await this.redis.get(this.keys.staleWrites(pool))) ?? 0);
  }
}
