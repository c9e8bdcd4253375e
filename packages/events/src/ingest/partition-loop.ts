import { backoffMs } from '@bubble/protocol';
import {
  INGEST_GROUP,
  IngestPartition,
  IngestReadConnection,
  type ClaimedIngestEntry,
  type RedisClient,
} from '@bubble/store';
import { Cluster, Redis } from 'ioredis';
import type { Logger } from 'pino';
import { holdEntry, segmentsOf, singleSegment, type HeldEntry, type Segment } from './entries.js';
import { describeFailure, failureKind, isNoGroup } from './failures.js';
import { IngestMetrics } from './metrics.js';
import type { IngestConsumerOptions } from './consumer-options.js';

/** The longest pause after a failure; each one in a row doubles it from RETRY_BASE_MS. */
const RETRY_BASE_MS = 100;
const RETRY_MAX_MS = 5_000;
/** Reads of commuting entries applied at once (see dispatch). */
const MAX_READS_IN_FLIGHT = 4;
/** Errors kept for entries left pending, so a dead letter after the cap carries its last one. */
const MAX_REMEMBERED_ERRORS = 10_000;

class StopRequested extends Error {}

/** One partition's consume loop: read, apply in order, acknowledge, claim, trim. */
export class PartitionLoop {
  stalls = 0;
  private stopping = false;
  /** XREADGROUP only: a blocked read holds up nothing else. */
  private reader: RedisClient;
  private readStream: IngestPartition;
  /**
   * On a standalone Redis, the reads go here instead: a socket of our own whose replies are
   * decoded from their bytes (see IngestReadConnection); `reader` then only connects.
   */
  private rawReader: IngestReadConnection | undefined;
  /** Everything else of the partition's stream. */
  private writer: RedisClient;
  private stream: IngestPartition;
  private readonly log: Logger;
  private failuresInRow = 0;
  private noGroupsInRow = 0;
  private wake: (() => void) | undefined;
  private claimCursor = '0-0';
  private nextClaimAt = 0;
  private nextTrimAt = 0;
  private nextForgetAt = 0;
  private readonly lastErrors = new Map<string, string>();
  private readonly inFlight = new Set<Promise<void>>();
  private backgroundFailure: unknown;

  constructor(
    private readonly options: IngestConsumerOptions,
    readonly partition: number,
    private readonly metrics: IngestMetrics,
  ) {
    this.log = options.logger.child({ ingestPartition: partition });
    this.reader = this.connect('read');
    this.readStream = new IngestPartition(this.reader, options.keys, partition);
    this.rawReader = this.connectRaw();
    this.writer = this.connect('write');
    this.stream = new IngestPartition(this.writer, options.keys, partition);
  }

  stop(): void {
    this.stopping = true;
    this.wake?.();
  }

  async run(): Promise<void> {
    const { count = 1000 } = this.options;
    await this.ensureGroup('start');
    // The next read, begun while the entries in hand are applied when a full read says more wait.
    let next: Promise<ClaimedIngestEntry[]> | undefined;
    while (!this.stopping || next) {
      try {
        // Claims and trims, when due, also while a read is prefetched (they use the writer).
        if (!this.stopping) await this.maintain();
        if (this.stopping && !next) break;
        const prefetched = next;
        next = undefined;
        const entries = await (prefetched ?? this.read());
        if (entries.length === count && !this.stopping) {
          next = this.read();
          // Awaited on the next turn; a failure there is handled there.
          next.catch(() => {});
        }
        if (entries.length > 0) await this.dispatch(entries.map((entry) => holdEntry(entry)));
        this.failuresInRow = 0;
        this.noGroupsInRow = 0;
      } catch (err) {
        if (err instanceof StopRequested) break;
        await this.onLoopError(err);
      }
    }
    await this.settle().catch(() => {});
    // A read begun before a stop: its entries stay pending and are claimed by another consumer.
    this.reader.disconnect();
    this.rawReader?.close();
    this.writer.disconnect();
  }

  private connect(use: 'read' | 'write'): RedisClient {
    const { redis, blockMs } = this.options;
    // A blocked read must not meet the client's command timeout before the watchdog does.
    const commandTimeout =
      use === 'read' ? Math.max(5_000, blockMs + this.stallGraceMs + 1_000) : 5_000;
    // The silence after which the socket is destroyed: past the block time for the reader.
    const socketTimeout = commandTimeout + 1_000;
    const connection =
      redis instanceof Cluster
        ? redis.duplicate(undefined, {
            redisOptions: { ...redis.options.redisOptions, commandTimeout, socketTimeout },
          })
        : redis.duplicate({
            commandTimeout,
            socketTimeout,
            // Reads go through IngestReadConnection: this one never sends, so never connects.
            lazyConnect: use === 'read' && this.readsOnOwnConnection,
          });
    connection.on('error', () => {});
    return connection;
  }

  private get readsOnOwnConnection(): boolean {
    return this.options.redis instanceof Redis && !this.options.packedReads;
  }

  private connectRaw(): IngestReadConnection | undefined {
    return this.readsOnOwnConnection
      ? new IngestReadConnection(this.options.redis as Redis)
      : undefined;
  }

  private get stallGraceMs(): number {
    return this.options.stallGraceMs ?? 5_000;
  }

  /**
   * Abandons both connections for new ones, after a read that never returned or a command that
   * timed out: a silent connection stays silent, and the two share their way to Redis.
   */
  private replaceConnections(): void {
    this.reader.disconnect();
    this.rawReader?.close();
    this.writer.disconnect();
    this.reader = this.connect('read');
    this.readStream = new IngestPartition(this.reader, this.options.keys, this.partition);
    this.rawReader = this.connectRaw();
    this.writer = this.connect('write');
    this.stream = new IngestPartition(this.writer, this.options.keys, this.partition);
  }

  /**
   * What is there now, or what comes within the block time, under the watchdog: on our own
   * connection where there is one, else packed by a script, then a blocking read when that
   * found nothing.
   */
  private async read(): Promise<ClaimedIngestEntry[]> {
    const { consumer, count = 1000 } = this.options;
    if (this.rawReader) return this.readBlocking();
    try {
      const ready = await this.readStream.readNow(consumer, count);
      if (ready.length > 0) return ready.map((entry) => ({ ...entry, deliveries: 1 }));
    } catch (err) {
      if (failureKind(err) === 'unavailable' && /timed out/i.test(String(err))) {
        this.replaceConnections();
      }
      throw err;
    }
    return this.readBlocking();
  }

  private async readBlocking(): Promise<ClaimedIngestEntry[]> {
    const { consumer, blockMs, count = 1000 } = this.options;
    const reading: Promise<ClaimedIngestEntry[]> = this.rawReader
      ? this.rawReader.read(
          this.readStream.stream,
          INGEST_GROUP,
          consumer,
          count,
          blockMs,
          blockMs + this.stallGraceMs + 1_000,
        )
      : this.readStream
          .read(consumer, count, blockMs)
          .then((entries) => entries.map((entry) => ({ ...entry, deliveries: 1 })));
    let timer: NodeJS.Timeout | undefined;
    const stalled = new Promise<'stalled'>((resolve) => {
      timer = setTimeout(() => resolve('stalled'), blockMs + this.stallGraceMs);
    });
    try {
      const result = await Promise.race([reading, stalled]);
      if (result === 'stalled') {
        // What the server may have delivered to it stays pending here and is claimed later.
        reading.catch(() => {});
        this.stalls++;
        this.metrics.readStalls.inc();
        this.log.warn({ blockMs }, 'ingest read stalled; replacing its connections');
        this.replaceConnections();
        return [];
      }
      return result;
    } catch (err) {
      if (failureKind(err) === 'unavailable' && /timed out/i.test(String(err))) {
        this.replaceConnections();
      }
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  /** XAUTOCLAIM, trimming and forgetting gone consumers, each when due. */
  private async maintain(): Promise<void> {
    const now = Date.now();
    const { claimMs } = this.options;
    if (now >= this.nextClaimAt) {
      const claim = await this.stream.claim(
        this.options.consumer,
        claimMs,
        this.options.count ?? 1000,
        this.claimCursor,
      );
      this.claimCursor = claim.cursor;
      // A scan that went round waits for the next period; one with more to go goes on at once.
      if (claim.cursor === '0-0') {
        this.nextClaimAt = now + Math.min(Math.max(claimMs / 2, 100), 10_000);
      }
      if (claim.entries.length > 0) {
        this.metrics.claimed.inc(claim.entries.length);
        await this.process(claim.entries.map((entry) => holdEntry(entry)));
      }
    }
    if (now >= this.nextTrimAt) {
      this.nextTrimAt = now + (this.options.trimEveryMs ?? 1_000);
      await this.stream.trim();
    }
    if (now >= this.nextForgetAt) {
      const idleMs = this.options.forgetConsumersAfterMs ?? 600_000;
      this.nextForgetAt = now + Math.min(idleMs, 60_000);
      const removed = await this.stream.removeIdleConsumers(this.options.consumer, idleMs);
      if (removed.length > 0) this.log.info({ removed }, 'ingest consumers gone idle deleted');
    }
  }

  /**
   * Processes a read. Reads of posts and messages only (and entries bound for the dead letters)
   * commute with each other (a post or message is stored by its id or seq, a delete leaves a
   * tombstone), so up to MAX_READS_IN_FLIGHT of them are applied at once, overlapping Redis'
   * work with ours; a read with any other op waits until they are done and goes alone, so
   * everything that depends on order keeps it.
   */
  private async dispatch(held: HeldEntry[]): Promise<void> {
    if (!held.every(commutes)) {
      await this.settle();
      await this.process(held);
      return;
    }
    while (this.inFlight.size >= MAX_READS_IN_FLIGHT) await Promise.race(this.inFlight);
    this.rethrowBackgroundFailure();
    const work: Promise<void> = this.process(held)
      .catch((err: unknown) => {
        if (!(err instanceof StopRequested)) this.backgroundFailure ??= err;
      })
      .finally(() => this.inFlight.delete(work));
    this.inFlight.add(work);
  }

  /** Waits for the reads in flight; a failure of one is this call's. */
  private async settle(): Promise<void> {
    await Promise.all(this.inFlight);
    this.rethrowBackgroundFailure();
  }

  private rethrowBackgroundFailure(): void {
    const failure = this.backgroundFailure;
    this.backgroundFailure = undefined;
    if (failure !== undefined) throw failure;
  }

  /** Applies entries in order, dead-letters the bad ones, then acknowledges the applied. */
  private async process(held: HeldEntry[]): Promise<void> {
    const { maxDeliveries } = this.options;
    const usable: HeldEntry[] = [];
    for (const one of held) {
      if (one.invalid !== undefined) {
        await this.deadLetter(one, describeFailure(one.invalid));
      } else if (one.entry.deliveries > maxDeliveries) {
        // Claimed after more deliveries than the cap: a consumer died on it each time.
        const error =
          this.lastErrors.get(one.entry.id) ??
          `delivered ${one.entry.deliveries - 1} times without being acknowledged`;
        await this.deadLetter(one, error);
      } else {
        usable.push(one);
      }
    }
    const applied: HeldEntry[] = [];
    try {
      for (const segment of segmentsOf(usable)) await this.applySegment(segment, applied);
    } finally {
      await this.ackApplied(applied);
    }
  }

  private async applySegment(segment: Segment, applied: HeldEntry[]): Promise<void> {
    for (;;) {
      try {
        await this.apply(segment);
        applied.push(...segment.held);
        return;
      } catch (err) {
        const kind = failureKind(err);
        if (kind === 'unavailable') {
          await this.pause(err);
          continue;
        }
        if (segment.held.length > 1) {
          for (const one of segment.held) await this.applySegment(singleSegment(one), applied);
          return;
        }
        const one = segment.held[0]!;
        const error = describeFailure(err);
        if (kind === 'invalid' || one.entry.deliveries >= this.options.maxDeliveries) {
          await this.deadLetter(one, error);
        } else {
          this.rememberError(one.entry.id, error);
          this.log.warn(
            { entry: one.entry.id, op: one.op, deliveries: one.entry.deliveries, err: error },
            'ingest entry failed; left pending for a later delivery',
          );
        }
        return;
      }
    }
  }

  private async apply(segment: Segment): Promise<void> {
    const { service } = this.options;
    if (segment.kind === 'posts') await service.ingestPosts(segment.posts);
    else if (segment.kind === 'messages') {
      await service.ingestMessages(segment.conversation, segment.messages);
    } else await segment.parsed.apply(service);
  }

  private async ackApplied(applied: HeldEntry[]): Promise<void> {
    if (applied.length === 0) return;
    const ids = applied.map((one) => one.entry.id);
    await this.onStream(() => this.stream.ack(ids));
    const byOp = new Map<string, number>();
    for (const one of applied) {
      if (this.lastErrors.size > 0) this.lastErrors.delete(one.entry.id);
      byOp.set(one.op, (byOp.get(one.op) ?? 0) + 1);
    }
    for (const [op, n] of byOp) this.metrics.entries.inc({ op, outcome: 'applied' }, n);
  }

  private async deadLetter(one: HeldEntry, error: string): Promise<void> {
    await this.onStream(() => this.stream.deadLetter(one.entry, error, one.entry.deliveries));
    this.lastErrors.delete(one.entry.id);
    this.metrics.entries.inc({ op: one.op, outcome: 'dead' });
    this.log.warn(
      { entry: one.entry.id, op: one.op, deliveries: one.entry.deliveries, err: error },
      'ingest entry moved to the dead letters',
    );
  }

  /**
   * A command of this partition's stream, retried in place while the store is unavailable. A
   * lost group means Redis lost the entries' pending state with it: nothing is left to ack.
   */
  private async onStream(command: () => Promise<unknown>): Promise<void> {
    for (;;) {
      try {
        await command();
        return;
      } catch (err) {
        if (isNoGroup(err)) return;
        if (failureKind(err) !== 'unavailable') throw err;
        if (/timed out/i.test(String(err))) this.replaceConnections();
        await this.pause(err);
      }
    }
  }

  private async onLoopError(err: unknown): Promise<void> {
    if (isNoGroup(err)) {
      this.noGroupsInRow++;
      // Never a tight loop: each NOGROUP in a row waits longer before the group is recreated.
      if (this.noGroupsInRow > 1) await this.sleep(pauseMs(this.noGroupsInRow - 1));
      await this.ensureGroup('lost');
      return;
    }
    if (/timed out/i.test(String(err))) this.replaceConnections();
    await this.pause(err);
  }

  private async ensureGroup(why: 'start' | 'lost'): Promise<void> {
    while (!this.stopping) {
      try {
        const created = await this.stream.createGroup();
        if (created) {
          this.metrics.groupCreated.inc();
          if (why === 'lost') {
            this.log.warn('ingest consumer group was missing (Redis lost it); recreated at 0');
          } else this.log.info('ingest consumer group created');
        }
        this.claimCursor = '0-0';
        return;
      } catch (err) {
        await this.pause(err).catch(() => {});
      }
    }
  }

  /** Waits out a failure, longer for each in a row; throws StopRequested once close() began. */
  private async pause(err: unknown): Promise<void> {
    if (this.stopping) throw new StopRequested();
    this.failuresInRow++;
    if (this.failuresInRow === 1 || this.failuresInRow % 20 === 0) {
      this.log.warn({ err: describeFailure(err), inRow: this.failuresInRow }, 'ingest retrying');
    }
    await this.sleep(pauseMs(this.failuresInRow));
    if (this.stopping) throw new StopRequested();
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
    });
  }

  private rememberError(id: string, error: string): void {
    if (this.lastErrors.size >= MAX_REMEMBERED_ERRORS) {
      this.lastErrors.delete(this.lastErrors.keys().next().value!);
    }
    this.lastErrors.set(id, error);
  }
}

/** Whether an entry's effect is the same whatever the order it is applied in among others. */
function commutes(one: HeldEntry): boolean {
  const kind = one.parsed?.kind;
  return kind === undefined || kind === 'posts' || kind === 'messages';
}

/** Never under 10 ms, so a failure in a row is never a tight loop. */
function pauseMs(inRow: number): number {
  return Math.max(10, backoffMs(inRow, RETRY_BASE_MS, RETRY_MAX_MS));
}
