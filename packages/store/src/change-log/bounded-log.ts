import { LOG_START, type LogEntry, type LogRead } from './change-log.js';
import { compareParsedIds, type StreamId } from '../stream-id.js';

interface Stored<E> extends StreamId {
  id: string;
  event: E;
}

/**
 * Entries in id order with the oldest trimmed past `maxLen`. Ids follow Redis: the clock's ms,
 * and a sequence within one ms; a clock that steps back keeps the last ms, so ids only grow.
 * Gaps are judged as readEvents-1.lua judges them, so both engines answer alike.
 */
export class BoundedLog<E> {
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
    if (atOrBefore >= this.head && compareParsedIds(this.entries[atOrBefore]!, after) === 0)
      return false;
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
      if (compareParsedIds(this.entries[mid]!, after) > 0) high = mid;
      else low = mid + 1;
    }
    return low;
  }
}
