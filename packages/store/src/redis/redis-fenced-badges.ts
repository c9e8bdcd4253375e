import { poolOf } from '@bubble/protocol';
import type { Cluster, Redis } from 'ioredis';
import type {
  BadgeChange,
  FencedBadges,
  FencedBadgeWrite,
  FencedSaveResult,
  KnownBadge,
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
    touched: string,
    online: string,
    events: string,
    ...args: (string | number | Buffer)[]
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
 * Badge writes through saveBadges-7.lua: a core's fenced batches, and (unfenced) the single
 * writes of cold starts and reads. Unfenced changes are published on their pool's channel (what
 * the owning core listens to); every change goes to the gateways holding its user.
 */
export class RedisFencedBadges implements FencedBadges {
  private readonly redis: RedisClient & FencedBadgeScripts;
  private readonly keys: RedisKeys;
  private readonly sharded: boolean;
  /** Where batches are encoded while calls are in flight (see reserve). */
  private slab = Buffer.allocUnsafeSlow(1 << 20);
  private slabUsed = 0;
  private inFlight = 0;

  constructor(options: RedisFencedBadgesOptions) {
    defineScripts(options.client);
    this.redis = options.client as RedisClient & FencedBadgeScripts;
    this.keys = options.keys;
    this.sharded = options.sharded;
  }

  saveFenced(
    pool: number,
    fence: number,
    writes: readonly FencedBadgeWrite[],
    computedAt: number,
    seenLog = '',
  ): Promise<FencedSaveResult> {
    return this.save(pool, fence, writes, computedAt, seenLog);
  }

  /** One user's state from a cold start: no lease, so no fence. */
  async saveUnfenced(user: string, fields: BadgeFields, computedAt: number): Promise<BadgeStamp> {
    const pool = poolOf(user, this.keys.pools);
    const { stamps } = await this.save(pool, '-', [{ user, fields }], computedAt, '');
    return stamps[0]!;
  }

  /**
   * A write whose writer believes it knows the stored state goes in blind (the script stores its
   * proposal unless another writer touched the user since); the others go first, in the segment
   * the script decides. The writes are encoded byte by byte, with no string per user: a core's
   * sweep encodes a hundred thousand of them, and the strings were most of what it allocated
   * (five young-generation collections a sweep). Only the beliefs are kept while the call is in
   * flight: `writes` may be reused by the caller once this returns.
   */
  private save(
    pool: number,
    fence: number | '-',
    writes: readonly FencedBadgeWrite[],
    computedAt: number,
    seenLog: string,
  ): Promise<FencedSaveResult> {
    const n = writes.length;
    if (n === 0) return Promise.resolve({ accepted: true, changed: 0, stamps: [] });
    const epoch = newEpoch();
    const stamp = String(computedAt);
    let decided = 0;
    let bound = 0;
    for (let i = 0; i < n; i++) {
      const { user, fields, known } = writes[i]!;
      // Every key of the script must be in the pool's slot.
      if (poolOf(user, this.keys.pools) !== pool) {
        return Promise.reject(new RangeError(`user ${user} is not in pool ${pool}`));
      }
      if (known === undefined || known.version < 0) decided++;
      bound += user.length + epoch.length + (known?.epoch.length ?? 0) + stamp.length;
      bound += MAX_NUMBER_LENGTH + 5 + countsBound(fields);
    }
    // Ids and states are ASCII (the id grammar), one byte a character. A gateway's single
    // writes use Node's buffer pool; a core's batches the slab.
    const room = fence === '-' ? Buffer.allocUnsafe(bound) : this.reserve(bound);
    // Script order (decided first) → write index.
    const order = new Int32Array(n);
    const beliefs: (KnownBadge | undefined)[] = new Array(n);
    let pos = 0;
    let at = 0;
    for (const blindPass of [false, true]) {
      for (let i = 0; i < n; i++) {
        const { user, fields, known } = writes[i]!;
        const blind = known !== undefined && known.version >= 0;
        if (blind !== blindPass) continue;
        pos = writeAscii(room, pos, user);
        room[pos++] = NEWLINE;
        if (blind && known.version > 0) {
          pos = writeAscii(room, pos, known.epoch);
          room[pos++] = PIPE;
          pos = writeNumber(room, pos, known.version + 1);
        } else {
          // A decided write's state is only read for its counts; a blind version 0 is fresh.
          pos = writeAscii(room, pos, epoch);
          room[pos++] = PIPE;
          room[pos++] = DIGIT_ONE;
        }
        room[pos++] = PIPE;
        pos = writeAscii(room, pos, stamp);
        room[pos++] = PIPE;
        pos = writeCounts(room, pos, fields);
        room[pos++] = NEWLINE;
        order[at] = i;
        beliefs[at++] = known;
      }
    }
    const body = room.subarray(0, pos);
    if (fence === '-') {
      return this.send(pool, fence, computedAt, epoch, decided, seenLog, body, beliefs, order);
    }
    this.slabUsed += pos;
    this.inFlight++;
    return this.send(
      pool,
      fence,
      computedAt,
      epoch,
      decided,
      seenLog,
      body,
      beliefs,
      order,
    ).finally(() => {
      if (--this.inFlight === 0) this.slabUsed = 0;
    });
  }

  /**
   * Room for `bound` bytes of a core's batch, off the V8 heap: a view into a slab reused once
   * none of its calls is in flight (between sweeps). A sweep's hundred batches are then not a
   * hundred new external buffers, which, kept alive across their round trips and so promoted,
   * made V8 start a full collection every dozen sweeps. The slab grows until it holds a sweep's
   * batches; the caller adds what it used to slabUsed.
   */
  private reserve(bound: number): Buffer {
    if (this.slabUsed + bound > this.slab.length) {
      // The old slab stays alive as long as views of it are in flight.
      this.slab = Buffer.allocUnsafeSlow(Math.max(2 * this.slab.length, 2 * bound));
      this.slabUsed = 0;
    }
    return this.slab.subarray(this.slabUsed, this.slabUsed + bound);
  }

  private async send(
    pool: number,
    fence: number | '-',
    computedAt: number,
    epoch: string,
    decided: number,
    seenLog: string,
    body: Buffer,
    beliefs: (KnownBadge | undefined)[],
    order: Int32Array,
  ): Promise<FencedSaveResult> {
    const { keys } = this;
    const reply = await this.redis.saveBadges(
      keys.fence(pool),
      keys.staleWrites(pool),
      keys.routes(pool),
      keys.badges(pool),
      keys.touched(pool),
      keys.online(pool),
      keys.poolEvents(pool),
      fence,
      computedAt,
      epoch,
      keys.badgeChannel(pool),
      this.sharded ? 'SPUBLISH' : 'PUBLISH',
      keys.gatewayChannelPrefix(pool),
      keys.writtenChannel(pool),
      decided,
      seenLog,
      body,
    );
    if (reply === -1) return { accepted: false, changed: 0, stamps: [] };
    return savedResult(reply, beliefs, order, epoch);
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
 * The script's answer: the number of changes on its first line, then a line
 * "<index>|<changed>|<epoch>|<version>|…" for each write it decided (index in script order).
 * Every other write stored the state proposed for it: the next version of its known one.
 * Beliefs are updated in place; stamps are made only when asked for (a core never needs them).
 */
function savedResult(
  reply: string,
  beliefs: readonly (KnownBadge | undefined)[],
  order: Int32Array,
  freshEpoch: string,
): FencedSaveResult {
  const n = beliefs.length;
  const epochs: string[] = new Array(n);
  const versions = new Float64Array(n);
  const changedFlags = new Uint8Array(n).fill(1);
  const corrected = new Uint8Array(n);
  const lines = reply.split('\n');
  for (let l = 1; l < lines.length; l++) {
    const line = lines[l]!;
    const a = line.indexOf('|');
    const at = Number(line.slice(0, a)) - 1;
    const b = line.indexOf('|', a + 3);
    const c = line.indexOf('|', b + 1);
    corrected[at] = 1;
    changedFlags[at] = line.charCodeAt(a + 1) === 49 /* '1' */ ? 1 : 0;
    epochs[at] = line.slice(a + 3, b);
    versions[at] = Number(line.slice(b + 1, c));
  }
  for (let at = 0; at < n; at++) {
    const known = beliefs[at];
    if (corrected[at] === 0) {
      // Stored as proposed: the next version of the known state, or the first of a fresh epoch.
      const next = known !== undefined && known.version > 0;
      epochs[at] = next ? known.epoch : freshEpoch;
      versions[at] = next ? known.version + 1 : 1;
    }
    if (known !== undefined) {
      known.epoch = epochs[at]!;
      known.version = versions[at]!;
    }
  }
  let stamps: FencedSaveResult['stamps'] | undefined;
  return {
    accepted: true,
    changed: Number(lines[0]),
    get stamps() {
      if (stamps === undefined) {
        stamps = new Array(n);
        for (let at = 0; at < n; at++) {
          stamps[order[at]!] = {
            epoch: epochs[at]!,
            version: versions[at]!,
            changed: changedFlags[at] === 1,
          };
        }
      }
      return stamps;
    },
  };
}

const NEWLINE = 0x0a;
const PIPE = 0x7c;
const EQUALS = 0x3d;
const DIGIT_ZERO = 0x30;
const DIGIT_ONE = 0x31;
/** Characters of the longest number String() writes ("-1.7976931348623157e+308"). */
const MAX_NUMBER_LENGTH = 24;

function writeAscii(target: Buffer, pos: number, text: string): number {
  for (let i = 0; i < text.length; i++) target[pos + i] = text.charCodeAt(i);
  return pos + text.length;
}

/** A number as String() writes it; small non-negative integers without making the string. */
function writeNumber(target: Buffer, pos: number, value: number): number {
  // Small integers (every count and version) in int32 arithmetic: a double's % is a call.
  if (!(Number.isInteger(value) && value >= 0 && value <= 0x7fffffff)) {
    return writeAscii(target, pos, String(value));
  }
  let end = pos + 1;
  for (let rest = value; rest >= 10; rest = (rest / 10) | 0) end++;
  let rest = value | 0;
  for (let p = end - 1; p >= pos; p--) {
    const next = (rest / 10) | 0;
    target[p] = DIGIT_ZERO + rest - next * 10;
    rest = next;
  }
  return end;
}

function countsBound(fields: Readonly<Record<string, number>>): number {
  let bound = 0;
  for (const name in fields) bound += name.length + MAX_NUMBER_LENGTH + 2;
  return bound;
}

/** encodeCounts(fields) written at `pos`; the usual single count without making strings. */
function writeCounts(target: Buffer, pos: number, fields: Readonly<Record<string, number>>) {
  let only: string | undefined;
  for (const name in fields) {
    if (only !== undefined) return writeAscii(target, pos, encodeCounts(fields));
    only = name;
  }
  if (only === undefined) return pos;
  const value = fields[only]!;
  if (value === 0) return pos;
  pos = writeAscii(target, pos, only);
  target[pos++] = EQUALS;
  return writeNumber(target, pos, value);
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
 * A published message: the writer's fencing token (or "-") on the first line, then two lines per
 * change: the user, then the packed state.
 */
export function decodeChanges(message: string): BadgeChange[] {
  const lines = message.split('\n');
  const changes: BadgeChange[] = new Array((lines.length - 1) >> 1);
  for (let i = 1, c = 0; i + 1 < lines.length; i += 2, c++) {
    changes[c] = { user: lines[i]!, ...decodeBadgeState(lines[i + 1]!) };
  }
  return changes;
}
