import { fnv1a32 } from '@bubble/protocol';
import type { RedisClient } from '../redis/connect.js';
import type { RedisKeys } from '../redis/keys.js';
import { readNewEntries } from '../redis/read-group.js';
import { scripts, type ScriptRunner } from '../redis/scripts.js';
import { streamIdMs } from '../stream-id.js';

/** The consumer group every gateway reads the ingest stream with (docs/api.md). */
export const INGEST_GROUP = 'bubble';

/** One entry of `<prefix>:ingest:{i}`: its id and its fields as Redis keeps them, name, value, … */
export interface IngestEntry {
  id: string;
  fields: string[];
}

/** An entry XAUTOCLAIM handed over, with the deliveries it has had, this one included. */
export interface ClaimedIngestEntry extends IngestEntry {
  deliveries: number;
}

export interface IngestClaim {
  /** Where the next XAUTOCLAIM of this partition goes on ('0-0': the scan went round). */
  cursor: string;
  entries: ClaimedIngestEntry[];
  /** Pending ids whose entry was trimmed or deleted: Redis dropped them from the group. */
  deleted: string[];
}

export interface IngestPartitionBacklog {
  partition: number;
  /** Entries not yet delivered to any consumer (the whole stream while the group is missing). */
  lag: number;
  /** Delivered, not acknowledged. */
  pending: number;
  /** The oldest pending entry's age on the store's clock, ms; 0 with nothing pending. */
  oldestPendingMs: number;
  deadLetters: number;
}

/** Counting undelivered entries one by one stops here (when Redis 7 cannot tell the lag). */
const LAG_COUNT_LIMIT = 100_000;

/** The partition a platform appends an entity's events to: FNV-1a of its id mod P. */
export function ingestPartitionOf(entity: string, partitions: number): number {
  return partitions <= 1 ? 0 : fnv1a32(entity) % partitions;
}

/**
 * The consumer-group commands of one ingest partition, all on its stream's slot (`{i}`; its
 * dead letters share the tag), so it works unchanged on Redis Cluster. Give it a connection of
 * its own when it blocks in read().
 */
export class IngestPartition {
  readonly stream: string;
  readonly dead: string;
  private readonly run: ScriptRunner;

  constructor(
    private readonly redis: RedisClient,
    keys: RedisKeys,
    readonly partition: number,
  ) {
    this.stream = keys.ingest(partition);
    this.dead = keys.ingestDead(partition);
    this.run = scripts(redis);
  }

  /** Creates the group at id 0 (the stream too, when missing). False when it existed. */
  async createGroup(): Promise<boolean> {
    try {
      await this.redis.xgroup('CREATE', this.stream, INGEST_GROUP, '0', 'MKSTREAM');
      return true;
    } catch (err) {
      if (err instanceof Error && err.message.startsWith('BUSYGROUP')) return false;
      throw err;
    }
  }

  /** XREADGROUP of new entries; blocks up to blockMs. Throws NOGROUP when the group is gone. */
  async read(consumer: string, count: number, blockMs: number): Promise<IngestEntry[]> {
    return toEntries(
      await readNewEntries(this.redis, this.stream, INGEST_GROUP, consumer, count, blockMs),
    );
  }

  /**
   * New entries without blocking, packed by readIngest-1.lua into one JSON text: the cheap
   * read while entries keep coming; read() blocks when this finds none.
   */
  async readNow(consumer: string, count: number): Promise<IngestEntry[]> {
    const packed = await this.run.readIngest([this.stream], [INGEST_GROUP, consumer, count]);
    if (packed === '') return [];
    return toEntries(JSON.parse(packed) as [string, string[] | null][]);
  }

  /**
   * XAUTOCLAIM of entries idle at least minIdleMs in any consumer (this one's included), then
   * their delivery counts from XPENDING (the claim counted one more).
   */
  async claim(
    consumer: string,
    minIdleMs: number,
    count: number,
    cursor = '0-0',
  ): Promise<IngestClaim> {
    const [next, raw, deleted] = (await this.redis.xautoclaim(
      this.stream,
      INGEST_GROUP,
      consumer,
      minIdleMs,
      cursor,
      'COUNT',
      count,
    )) as [string, [string, string[] | null][], string[] | undefined];
    const entries = toEntries(raw);
    if (entries.length === 0) return { cursor: next, entries: [], deleted: deleted ?? [] };
    const first = entries[0]!.id;
    const last = entries[entries.length - 1]!.id;
    const pending = (await this.redis.xpending(
      this.stream,
      INGEST_GROUP,
      first,
      last,
      entries.length * 2 + 100,
      consumer,
    )) as [string, string, number, number][];
    const deliveries = new Map<string, number>();
    for (const [id, , , times] of pending) deliveries.set(id, Number(times));
    return {
      cursor: next,
      entries: entries.map((entry) => ({ ...entry, deliveries: deliveries.get(entry.id) ?? 1 })),
      deleted: deleted ?? [],
    };
  }

  /** One XACK for a batch; the number acknowledged. */
  async ack(ids: readonly string[]): Promise<number> {
    if (ids.length === 0) return 0;
    return Number(await this.redis.xack(this.stream, INGEST_GROUP, ...ids));
  }

  /**
   * Moves an entry to the dead letters with its error and deliveries and acknowledges it, in
   * one script. Null when it was no longer pending (someone else acknowledged it).
   */
  deadLetter(entry: IngestEntry, error: string, deliveries: number): Promise<string | null> {
    return this.run.deadLetterIngest(
      [this.stream, this.dead],
      [INGEST_GROUP, entry.id, error, deliveries, ...entry.fields],
    );
  }

  /** Drops the acknowledged entries at the stream's head (trimIngest-1.lua). */
  trim(): Promise<number> {
    return this.run.trimIngest([this.stream], [INGEST_GROUP]);
  }

  /**
   * Deletes the group's consumers other than `self` with nothing pending and idle at least
   * idleMs (gateways that are gone); the names deleted.
   */
  async removeIdleConsumers(self: string, idleMs: number): Promise<string[]> {
    const consumers = (await this.redis.xinfo('CONSUMERS', this.stream, INGEST_GROUP)) as (
      string | number
    )[][];
    const removed: string[] = [];
    for (const flat of consumers) {
      const info = new Map<string, string | number>();
      for (let i = 0; i + 1 < flat.length; i += 2) info.set(String(flat[i]), flat[i + 1]!);
      const name = String(info.get('name'));
      if (name === self || Number(info.get('pending')) > 0) continue;
      if (Number(info.get('idle')) < idleMs) continue;
      await this.redis.xgroup('DELCONSUMER', this.stream, INGEST_GROUP, name);
      removed.push(name);
    }
    return removed;
  }
}

/** Every partition's backlog, each read in one script on its shard at the server's clock. */
export async function readIngestBacklog(
  redis: RedisClient,
  keys: RedisKeys,
  partitions: number,
): Promise<IngestPartitionBacklog[]> {
  const run = scripts(redis);
  const all = Array.from({ length: partitions }, async (_, partition) => {
    const [, lag, pending, oldest, now, dead] = await run.readIngestBacklog(
      [keys.ingest(partition), keys.ingestDead(partition)],
      [INGEST_GROUP, LAG_COUNT_LIMIT],
    );
    const oldestMs = oldest === '' ? now : streamIdMs(oldest);
    return {
      partition,
      lag: Number(lag),
      pending: Number(pending),
      oldestPendingMs: Math.max(0, Number(now) - oldestMs),
      deadLetters: Number(dead),
    };
  });
  return Promise.all(all);
}

function toEntries(raw: [string, string[] | null][]): IngestEntry[] {
  const entries: IngestEntry[] = [];
  // An entry deleted while pending comes back without fields: nothing is left to apply.
  for (const [id, fields] of raw) entries.push({ id, fields: fields ?? [] });
  return entries;
}
