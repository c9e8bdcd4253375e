import { parseStreamId } from '../stream-id.js';
import { BoundedLog } from './bounded-log.js';
import {
  LOG_START,
  type ChangeLog,
  type LogRead,
  type PoolEvent,
  type PostEvent,
  type SharedEvent,
} from './change-log.js';
import { checkLimit, logCaps, type LogCapOptions } from './log-limits.js';

export type MemoryChangeLogOptions = LogCapOptions;

/** The change logs of this process: bounded, with ids and gap reports as Redis streams have. */
export class MemoryChangeLog implements ChangeLog {
  readonly maxPostEvents: number;
  readonly maxPoolEvents: number;
  private readonly posts: BoundedLog<PostEvent>;
  private readonly pools = new Map<number, BoundedLog<PoolEvent>>();
  private readonly shared: BoundedLog<SharedEvent>;

  constructor(options: MemoryChangeLogOptions = {}) {
    ({ maxPostEvents: this.maxPostEvents, maxPoolEvents: this.maxPoolEvents } = logCaps(options));
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
      const from = parseStreamId(after);
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
    return this.posts.read(parseStreamId(after), limit);
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
    return this.shared.read(parseStreamId(after), limit);
  }

  async sharedLogEnd(): Promise<string> {
    return this.shared.end();
  }
}
