import {
  LOG_START,
  type ChangeLog,
  type LogEntry,
  type LogRead,
  type PoolEvent,
  type PostEvent,
} from '../cluster-types.js';
import type { SharedEvent } from '../extras-types.js';

export interface MemoryChangeLogOptions {
  /** Most post events kept; older ones are trimmed. Default 100_000. */
  maxPostEvents?: number;
  /** Most events kept per pool; older ones are trimmed. Default 10_000. */
  maxPoolEvents?: number;
}

/** The change logs of this process: bounded, with ids and gap reports as Redis streams have. */
export class MemoryChangeLog implements ChangeLog {
  readonly maxPostEvents: number;
  readonly maxPoolEvents: number;
  private readonly posts: BoundedLog<PostEvent>;
  private readonly pools = new Map<number, BoundedLog<PoolEvent>>();
  private readonly shared: BoundedLog<SharedEvent>;

  constructor(options: MemoryChangeLogOptions = {}) {
    this.maxPostEvents = positiveInteger('maxPostEvents', options.maxPostEvents ?? 100_000);
    this.maxPoolEvents = positiveInteger('maxPoolEvents', options.maxPoolEvents ?? 10_000);
    this.posts = new BoundedLog(this.maxPostEvents);
    this.shared = new BoundedLog(this.maxPostEvents);
  }

  async appendPoolEvents(pool: number, events: readonly PoolEvent[]): Promise<void> {
    this.appendPoolEventsNow(pool, events);
  }

  /** Appends without yielding, for callers whose own step must stay atomic (presence). */
  appendPoolEventsNow(pool: number, events: readonly PoolEvent[]): void {
    if (events.length === 0) return;
    let log = this.pools.get(pool);
    if (!log) this.pools.set(pool, (log = new BoundedLog(this.maxPoolEvents)));
    for (const event of events) log.append(event);
  }

  async readPoolEvents(
    cursors: ReadonlyArray<{ pool: number; after: string }>,
    limit: number,
  ): Promise<Map<number, LogRead<PoolEvent>>> {
    checkLimit(limit);
    const reads = new Map<number, LogRead<PoolEvent>>();
    for (const { pool, after } of cursors) {
      const from = parseId(after);
      // No log yet: a position past the start was never handed out by it (see BoundedLog.missed).
      const empty = { entries: [], gap: after !== LOG_START };
      reads.set(pool, this.pools.get(pool)?.read(from, limit) ?? empty);
    }
    return reads;
  }

  async poolLogEnd(pool: number): Promise<string> {
    return this.pools.get(pool)?.end() ?? LOG_START;
  }

  async appendPostEvents(events: readonly PostEvent[]): Promise<void> {
    this.appendPostEventsNow(events);
  }

  /** Appends without yielding: the post index logs in the step that stores (one step). */
  appendPostEventsNow(events: readonly PostEvent[]): void {
    for (const event of events) this.posts.append(event);
  }

  async readPostEvents(after: string, limit: number): Promise<LogRead<PostEvent>> {
    checkLimit(limit);
    return this.posts.read(parseId(after), limit);
  }

  async postLogEnd(): Promise<string> {
    return this.posts.end();
  }

  async appendSharedEvents(events: readonly SharedEvent[]): Promise<void> {
    this.appendSharedEventsNow(events);
  }

  /** Appends without yielding, for notices and red dots that log in the step that writes. */
  appendSharedEventsNow(events: readonly SharedEvent[]): void {
    for (const event of events) this.shared.append(event);
  }

  async readSharedEvents(after: string, limit: number): Promise<LogRead<SharedEvent>> {
    checkLimit(limit);
    return this.shared.read(parseId(after), limit);
  }

  async sharedLogEnd(): Promise<string> {
    return this.shared.end();
  }
}

/** A stream id, "<ms>-<seq>", split for comparison. */
interface StreamId {
  ms: number;
  seq: number;
}

interface Stored<E> extends StreamId {
  id: string;
  event: E;
}

/**
 * Entries in id order with the oldest trimmed past `maxLen`. Ids follow Redis: the clock's ms,
 * and a sequence within one ms; a clock that steps back keeps the last ms, so ids only grow.
 * Gaps are judged as readEvents-1.lua judges them, so both engines answer alike.
 */
class BoundedLog<E> {
  private entries: Stored<E>[] = [];
  /** Index of the oldest kept entry; the array is compacted once half of it is trimmed. */
  private head = 0;
  private last: StreamId = { ms: 0, seq: 0 };
  private trimmed = false;

  constructor(private readonly maxLen: number) {}

  append(event: E): void {
    const now = Date.now();
    this.last =
      now > this.last.ms ? { ms: now, seq: 0 } : { ms: this.last.ms, seq: this.last.seq + 1 };
    const { ms, seq } = this.last;
    this.entries.push({ ms, seq, id: `${ms}-${seq}`, event: Object.freeze({ ...event }) });
    if (this.entries.length - this.head > this.maxLen) {
      this.trimmed = true;
      this.head++;
      if (this.head >= 1024 && this.head * 2 >= this.entries.length) {
        this.entries = this.entries.slice(this.head);
        this.head = 0;
      }
    }
  }

  read(after: StreamId, limit: number): LogRead<E> {
    const entries: LogEntry<E>[] = [];
    for (let i = this.firstAfter(after); i < this.entries.length && entries.length < limit; i++) {
      const { id, event } = this.entries[i]!;
      entries.push({ id, event });
    }
    return { entries, gap: this.missed(after) };
  }

  /**
   * Whether a reader at `after` missed entries. A position past LOG_START is an id this log
   * handed out, so it is kept unless trimmed: when it is not kept, the reader missed entries
   * unless it is the newest trimmed one. That one is gone, so the id just before the oldest
   * kept one stands in for it: exact when both share a millisecond, else a reader right at the
   * trim point is told of a gap it does not have (a needless reload, never a missed change).
   * A position this log never had (another log's) is a gap too, as a Redis stream that was
   * lost and recreated answers a reader of the old one (readEvents-1.lua).
   */
  private missed(after: StreamId): boolean {
    const first = this.entries[this.head];
    if (after.ms === 0 && after.seq === 0) return this.trimmed;
    const atOrBefore = this.firstAfter(after) - 1;
    if (atOrBefore >= this.head && compareIds(this.entries[atOrBefore]!, after) === 0) return false;
    const lastTrimmed =
      this.trimmed && first !== undefined && after.ms === first.ms && after.seq === first.seq - 1;
    return !lastTrimmed;
  }

  end(): string {
    return this.entries.length > this.head ? this.entries[this.entries.length - 1]!.id : LOG_START;
  }

  /** Binary search for the first kept entry with an id greater than `after`. */
  private firstAfter(after: StreamId): number {
    let low = this.head;
    let high = this.entries.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (compareIds(this.entries[mid]!, after) > 0) high = mid;
      else low = mid + 1;
    }
    return low;
  }
}

const STREAM_ID = /^(\d+)-(\d+)$/;

function parseId(id: string): StreamId {
  const match = STREAM_ID.exec(id);
  if (!match) throw new RangeError(`${JSON.stringify(id)} is not a log position "<ms>-<seq>"`);
  return { ms: Number(match[1]), seq: Number(match[2]) };
}

function compareIds(a: StreamId, b: StreamId): number {
  return a.ms - b.ms || a.seq - b.seq;
}

function checkLimit(limit: number): void {
  if (!Number.isInteger(limit) || limit < 1) {
    throw new RangeError('limit must be a positive integer');
  }
}

function positiveInteger(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1) {
    throw new RangeError(`${name} must be a positive integer`);
  }
  return value;
}
