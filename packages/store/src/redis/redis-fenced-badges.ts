import { poolOf } from '@bubble/protocol';
import { Command, type Cluster, type Redis } from 'ioredis';
import type {
  BadgeChange,
  FencedBadges,
  FencedBadgeWrite,
  FencedSaveOptions,
  FencedSaveResult,
  KnownBadge,
} from '../cluster-types.js';
import { newEpoch } from '../epoch.js';
import type { BadgeFields, BadgeStamp, StoredBadge } from '../types.js';
import type { RedisClient } from './connect.js';
import type { RedisKeys } from './keys.js';
import { scriptSource, scripts, type ScriptRunner } from './scripts.js';

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

const { lua: SAVE_LUA, sha: SAVE_SHA } = scriptSource('saveBadges');

/**
 * Badge writes through saveBadges-7.lua: a core's fenced batches, and (unfenced) the single
 * writes of cold starts and reads. Unfenced changes are published on their pool's channel (what
 * the owning core listens to); every change goes to the gateways holding its user.
 */
export class RedisFencedBadges implements FencedBadges {
  private readonly redis: RedisClient;
  private readonly run: ScriptRunner;
  private readonly keys: RedisKeys;
  private readonly sharded: boolean;
  /** Where batches are encoded while calls are in flight (see reserve). */
  private slab = Buffer.allocUnsafeSlow(1 << 20);
  private slabUsed = 0;
  private inFlight = 0;

  constructor(options: RedisFencedBadgesOptions) {
    this.redis = options.client;
    this.run = scripts(options.client);
    this.keys = options.keys;
    this.sharded = options.sharded;
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
      const { user, fields, known } = writes[i]!;
      // Every key of the script must be in the pool's slot.
      if (poolOf(user, this.keys.pools) !== pool) {
        return Promise.reject(new RangeError(`user ${user} is not in pool ${pool}`));
      }
      if (known === undefined || known.version < 0) decided++;
      bound += user.length + epoch.length + (known?.epoch.length ?? 0) + stamp.length;
      bound += 2 * MAX_NUMBER_LENGTH + 20 + countsBound(fields);
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
    // EVALSHA, the sha, the key count, the head, then a user and a state per write.
    const header = `*${3 + head.length + 2 * n}\r\n$7\r\nEVALSHA\r\n$40\r\n${SAVE_SHA}\r\n$1\r\n${keyArgs.length}\r\n`;
    bound += header.length;
    for (const arg of head) bound += arg.length + 16;
    // Ids and states are ASCII (the id grammar), one byte a character. A gateway's single
    // writes use Node's buffer pool; a core's batches the slab.
    const room = fence === '-' ? Buffer.allocUnsafe(bound) : this.reserve(bound);
    let pos = writeAscii(room, 0, header);
    const argsAt = pos;
    for (const arg of head) pos = writeBulkAscii(room, pos, arg);
    // Script order (decided first) → write index: only stamps, in input order, need it.
    const order = withStamps ? new Int32Array(n) : null;
    const beliefs: (KnownBadge | undefined)[] = new Array(n);
    let at = 0;
    for (const blindPass of [false, true]) {
      for (let i = 0; i < n; i++) {
        const { user, fields, known } = writes[i]!;
        const blind = known !== undefined && known.version >= 0;
        if (blind !== blindPass) continue;
        pos = writeBulkAscii(room, pos, user);
        // "<epoch>|<version>|<computedAt>|<counts>"; a decided write's state is only read for
        // its counts, and a blind version 0 is a fresh epoch's first.
        const next = blind && known.version > 0;
        const stateEpoch = next ? known.epoch : epoch;
        const version = next ? known.version + 1 : 1;
        const only = onlyField(fields);
        const several = only === null ? encodeCounts(fields) : NO_COUNTS;
        const value = only ? fields[only]! : 0;
        const countsLength =
          only === null ? several.length : only ? only.length + 1 + numberLength(value) : 0;
        const length = stateEpoch.length + numberLength(version) + stamp.length + countsLength + 3;
        pos = writeLengthPrefix(room, pos, length);
        pos = writeAscii(room, pos, stateEpoch);
        room[pos++] = PIPE;
        pos = writeNumber(room, pos, version);
        room[pos++] = PIPE;
        pos = writeAscii(room, pos, stamp);
        room[pos++] = PIPE;
        if (only) {
          pos = writeAscii(room, pos, only);
          room[pos++] = EQUALS;
          pos = writeNumber(room, pos, value);
        } else {
          pos = writeAscii(room, pos, several);
        }
        room[pos++] = CR;
        room[pos++] = LF;
        if (order) order[at] = i;
        beliefs[at++] = known;
      }
    }
    const command = room.subarray(0, pos);
    if (fence === '-') return this.send(keyArgs, command, argsAt, beliefs, order, epoch);
    this.slabUsed += pos;
    this.inFlight++;
    return this.send(keyArgs, command, argsAt, beliefs, order, epoch).finally(() => {
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

  /**
   * Sends an encoded EVALSHA; where the server does not have the script (a restart, a failover,
   * SCRIPT FLUSH), sends it once more as EVAL, which also loads it.
   */
  private async send(
    keyArgs: string[],
    command: Buffer,
    argsAt: number,
    beliefs: (KnownBadge | undefined)[],
    order: Int32Array | null,
    freshEpoch: string,
  ): Promise<FencedSaveResult> {
    let reply: SaveReply;
    try {
      reply = await this.call(keyArgs, command);
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
      const count = command.subarray(1, command.indexOf(CR)).toString('latin1');
      const evalHeader = `*${count}\r\n$4\r\nEVAL\r\n$${Buffer.byteLength(SAVE_LUA)}\r\n${SAVE_LUA}\r\n$1\r\n${keyArgs.length}\r\n`;
      reply = await this.call(
        keyArgs,
        Buffer.concat([Buffer.from(evalHeader), command.subarray(argsAt)]),
      );
    }
    if (reply === -1) return { accepted: false, changed: 0 };
    return savedResult(reply, beliefs, order, freshEpoch);
  }

  private call(keyArgs: string[], encoded: Buffer): Promise<SaveReply> {
    const command = new EncodedCommand(keyArgs, encoded);
    // sendCommand answers with command.promise itself, which the caller awaits.
    void this.redis.sendCommand(command);
    return command.promise as Promise<SaveReply>;
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
        this.run.routeUsers([this.keys.routes(pool)], [gateway, expiry, now, ...list]),
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
 * Beliefs are updated in place. A core's batches allocate nothing here beyond the decided
 * lines' epochs: per-batch arrays, alive across the sweep's round trips, were promoted and
 * made V8 start full collections during sweeps. Stamps (`order` given) are made only on request.
 */
function savedResult(
  reply: string,
  beliefs: readonly (KnownBadge | undefined)[],
  order: Int32Array | null,
  freshEpoch: string,
): FencedSaveResult {
  const n = beliefs.length;
  const corrected = correctedMarks(n);
  const stamps: NonNullable<FencedSaveResult['stamps']> | null = order && new Array(n);
  let end = reply.indexOf('\n');
  const changed = Number(end < 0 ? reply : reply.slice(0, end));
  while (end >= 0) {
    const from = end + 1;
    end = reply.indexOf('\n', from);
    const a = reply.indexOf('|', from);
    const at = Number(reply.slice(from, a)) - 1;
    const b = reply.indexOf('|', a + 3);
    const c = reply.indexOf('|', b + 1);
    const epoch = reply.slice(a + 3, b);
    const version = Number(reply.slice(b + 1, c));
    corrected[at] = 1;
    if (stamps) stamps[order![at]!] = { epoch, version, changed: reply.charCodeAt(a + 1) === 49 };
    const known = beliefs[at];
    if (known !== undefined) {
      known.epoch = epoch;
      known.version = version;
    }
  }
  for (let at = 0; at < n; at++) {
    if (corrected[at] === 1) {
      corrected[at] = 0;
      continue;
    }
    // Stored as proposed: the next version of the known state, or the first of a fresh epoch.
    const known = beliefs[at];
    const next = known !== undefined && known.version > 0;
    const epoch = next ? known.epoch : freshEpoch;
    const version = next ? known.version + 1 : 1;
    if (stamps) stamps[order![at]!] = { epoch, version, changed: true };
    if (known !== undefined) {
      known.epoch = epoch;
      known.version = version;
    }
  }
  return stamps ? { accepted: true, changed, stamps } : { accepted: true, changed };
}

/** Marks of the decided writes, one per write of a batch; all 0 between calls. */
let correctedScratch = new Uint8Array(1024);

function correctedMarks(n: number): Uint8Array {
  if (correctedScratch.length < n)
    correctedScratch = new Uint8Array(Math.max(n, 2 * correctedScratch.length));
  return correctedScratch;
}

const CR = 0x0d;
const LF = 0x0a;
const DOLLAR = 0x24;
const PIPE = 0x7c;
const EQUALS = 0x3d;
const DIGIT_ZERO = 0x30;
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
  const end = pos + numberLength(value);
  let rest = value | 0;
  for (let p = end - 1; p >= pos; p--) {
    const next = (rest / 10) | 0;
    target[p] = DIGIT_ZERO + rest - next * 10;
    rest = next;
  }
  return end;
}

/** The length of what writeNumber writes. */
function numberLength(value: number): number {
  if (!(Number.isInteger(value) && value >= 0 && value <= 0x7fffffff)) return String(value).length;
  let length = 1;
  for (let rest = value; rest >= 10; rest = (rest / 10) | 0) length++;
  return length;
}

function countsBound(fields: Readonly<Record<string, number>>): number {
  let bound = 0;
  for (const name in fields) bound += name.length + MAX_NUMBER_LENGTH + 2;
  return bound;
}

/**
 * How encodeCounts would write a state's counts, found without making a string or an object in
 * the usual case of a single field: NO_COUNTS when there are none (or its only count is 0), the
 * name of the only field, or null when there are several (then encodeCounts writes them).
 * Field names are never empty.
 */
function onlyField(fields: Readonly<Record<string, number>>): string | null {
  let only: string | undefined;
  for (const name in fields) {
    if (only !== undefined) return null;
    only = name;
  }
  return only === undefined || fields[only] === 0 ? NO_COUNTS : only;
}

const NO_COUNTS = '';

/** "$<length>\r\n" */
function writeLengthPrefix(target: Buffer, pos: number, length: number): number {
  target[pos++] = DOLLAR;
  pos = writeNumber(target, pos, length);
  target[pos++] = CR;
  target[pos++] = LF;
  return pos;
}

/** An ASCII string as a RESP bulk string. */
function writeBulkAscii(target: Buffer, pos: number, text: string): number {
  pos = writeLengthPrefix(target, pos, text.length);
  pos = writeAscii(target, pos, text);
  target[pos++] = CR;
  target[pos++] = LF;
  return pos;
}

/** The command ioredis sends for a save: encoded by the caller, keys given for routing. */
class EncodedCommand extends Command {
  constructor(
    keyArgs: string[],
    private readonly encoded: Buffer,
  ) {
    super('evalsha', [SAVE_SHA, keyArgs.length, ...keyArgs], { replyEncoding: 'utf8' });
  }

  override toWritable(): Buffer {
    return this.encoded;
  }
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
