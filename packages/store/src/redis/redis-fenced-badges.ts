import {
  decodeBadgeState,
  decodeChanges,
  newEpoch,
  poolOf,
  usersByPool,
  type BadgeChange,
  type BadgeChangeReader,
  type BadgeFields,
} from '@bubble/protocol';
import type {
  FencedBadges,
  FencedBadgeWrite,
  FencedSaveOptions,
  FencedSaveResult,
  KnownBadge,
  MissedMessages,
} from '../cluster-types.js';
import { PackedStateWriter, packedStateBound } from '../packed-state-writer.js';
import type { BadgeStamp } from '../types.js';
import { RedisBadgeRoutes } from './badge-routes.js';
import type { RedisClient } from './connect.js';
import { GatewaySubscription } from './gateway-subscription.js';
import { sendEncodedScript, type CommandCounter } from './ioredis-internals.js';
import type { RedisKeys } from './keys.js';
import { listen, subscriberConnection } from './pubsub-listener.js';
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
} from './resp-writer.js';
import { readSaveReply } from './save-reply.js';
import { scriptSource, scripts, type ScriptRunner } from './scripts.js';

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
/** Users a storedStates HMGET asks for at most. */
const STATES_PER_READ = 1_000;

/**
 * Badge writes through saveBadges-8.lua: a core's fenced batches, and (unfenced) the single
 * writes of cold starts and reads. Unfenced changes are published on their pool's channel (what
 * the owning core listens to); every change goes to the gateways holding its user.
 */
export class RedisFencedBadges implements FencedBadges {
  private readonly redis: RedisClient;
  private readonly keys: RedisKeys;
  private readonly sharded: boolean;
  private readonly commands: CommandCounter | undefined;
  private readonly routes: RedisBadgeRoutes;
  private readonly run: ScriptRunner;
  private readonly slab = new EncodingSlab();
  private readonly state = new PackedStateWriter();

  constructor(options: RedisFencedBadgesOptions) {
    this.redis = options.client;
    this.keys = options.keys;
    this.sharded = options.sharded;
    this.commands = options.commands;
    this.routes = new RedisBadgeRoutes(options.client, options.keys);
    this.run = scripts(options.client);
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
    return new GatewaySubscription({
      client: this.redis,
      keys: this.keys,
      gateway,
      sharded: this.sharded,
      commands: this.commands,
      onChanges: handler,
      missed,
    }).start();
  }

  async signalLists(users: readonly string[]): Promise<void> {
    const { keys } = this;
    const publish = this.sharded ? 'SPUBLISH' : 'PUBLISH';
    await Promise.all(
      [...usersByPool(users, keys.pools)].map(([pool, list]) =>
        this.run.signalLists([keys.routes(pool)], [keys.listChannelPrefix(pool), publish, ...list]),
      ),
    );
  }

  async subscribeListSignals(
    gateway: string,
    handler: (users: string[]) => void,
    onLost?: () => void,
  ): Promise<() => Promise<void>> {
    const { keys } = this;
    const channels = Array.from(
      { length: keys.pools },
      (_, pool) => `${keys.listChannelPrefix(pool)}${gateway}`,
    );
    const subscriber = subscriberConnection(this.redis, this.sharded, `bubble-lists:${gateway}`);
    // A plain connection says when it is back (ioredis subscribes again by itself); a Cluster's
    // sharded subscribers do not, and the gateway's slow refresh covers what they lose.
    let dropped = false;
    const onClose = () => {
      dropped = true;
    };
    const onReady = () => {
      if (!dropped) return;
      dropped = false;
      onLost?.();
    };
    subscriber.on('close', onClose);
    subscriber.on('ready', onReady);
    const stop = await listen({
      subscriber,
      channels,
      sharded: this.sharded,
      onMessage: (_channel, message) => handler(message.split('\n')),
      commands: this.commands,
    });
    return async () => {
      subscriber.off('close', onClose);
      subscriber.off('ready', onReady);
      await stop();
    };
  }

  async forgetGateways(live: ReadonlySet<string>): Promise<number> {
    const { keys } = this;
    const forgotten = await Promise.all(
      Array.from({ length: keys.pools }, async (_, pool) => {
        const key = keys.sentToGateways(pool);
        const gone = (await this.redis.hkeys(key)).filter((gateway) => !live.has(gateway));
        return gone.length === 0 ? 0 : this.redis.hdel(key, ...gone);
      }),
    );
    return forgotten.reduce((sum, n) => sum + n, 0);
  }

  async storedStates(users: readonly string[]): Promise<BadgeChange[]> {
    const byPool = usersByPool(users, this.keys.pools);
    const states: BadgeChange[] = [];
    await Promise.all(
      [...byPool].map(async ([pool, list]) => {
        for (let first = 0; first < list.length; first += STATES_PER_READ) {
          const chunk = list.slice(first, first + STATES_PER_READ);
          const packed = await this.redis.hmget(this.keys.badges(pool), ...chunk);
          packed.forEach((state, k) => {
            if (state !== null) states.push({ user: chunk[k]!, ...decodeBadgeState(state) });
          });
        }
      }),
    );
    return states;
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

  private listen(
    channels: string[],
    onMessage: (channel: string, message: string) => void,
  ): Promise<() => Promise<void>> {
    return listen({
      subscriber: subscriberConnection(this.redis, this.sharded),
      channels,
      sharded: this.sharded,
      onMessage,
      commands: this.commands,
    });
  }
}
