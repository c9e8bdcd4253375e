import { growFloat64, growInt32, type InternTable } from '../intern-table.js';
import type { Arrivals } from './arrivals.js';
import type { FollowerLists } from './follower-lists.js';
import { upperBound } from './sorted-times.js';

/**
 * The posts that reach users through a topic. A post carrying a topic some held user follows
 * gets a record (its author, its topics, ts, id hash), kept in the window of each such topic
 * (record ids by ts in winRec[winStart … winEnd), their ts beside them in winTs). An author or
 * topic a record names stays interned (authorRecRefs, topicRecRefs) until its last record goes,
 * whether followed or not.
 */
export class TopicRecords {
  recAuthor = new Int32Array(0);
  recTopics: Int32Array[] = [];
  recTs = new Float64Array(0);
  authorRecRefs = new Int32Array(0);
  /** 1 once a topic's stored posts have been loaded into its window. */
  topicTracked = new Uint8Array(0);
  winTs: (Float64Array<ArrayBuffer> | undefined)[] = [];
  winRec: (Int32Array<ArrayBuffer> | undefined)[] = [];
  winStart = new Int32Array(0);
  winEnd = new Int32Array(0);
  /** "<author>\n<ts>\n<hash>" → record id, for the posts that have a record. */
  private readonly recordOf = new Map<string, number>();
  private recKey: string[] = [];
  private recHash = new Int32Array(0);
  /** Topic windows holding the record; 0 for a free record id. */
  private recLive = new Int32Array(0);
  private topicRecRefs = new Int32Array(0);
  private readonly freeRecords: number[] = [];
  private recordCount = 0;
  /** Per-author and per-topic marks of topicOnlyCount (a user's follows and topics). */
  private authorMark = new Int32Array(0);
  private topicMark = new Int32Array(0);
  private markStamp = 0;

  constructor(
    private readonly authors: InternTable,
    private readonly topics: InternTable,
    private readonly authorFollowers: FollowerLists,
    private readonly topicFollowers: FollowerLists,
    private readonly arrivals: Arrivals,
  ) {}

  get size(): number {
    return this.recordOf.size;
  }

  ensureAuthorCapacity(n: number): void {
    this.authorRecRefs = growInt32(this.authorRecRefs, n);
    this.authorMark = growInt32(this.authorMark, n);
  }

  ensureTopicCapacity(size: number): void {
    this.winStart = growInt32(this.winStart, size);
    this.winEnd = growInt32(this.winEnd, size);
    this.topicMark = growInt32(this.topicMark, size);
    this.topicRecRefs = growInt32(this.topicRecRefs, size);
    const tracked = new Uint8Array(size);
    tracked.set(this.topicTracked);
    this.topicTracked = tracked;
  }

  /** The record of a post, if it has one. */
  recordOfKey(key: string): number | undefined {
    return this.recordOf.size > 0 ? this.recordOf.get(key) : undefined;
  }

  /** Whether an author window's post has a record (which walks it instead). */
  coversPost(a: number, ts: number, hash: number): boolean {
    return this.recordOf.size > 0 && this.recordOf.has(recordKey(this.authors.nameOf(a), ts, hash));
  }

  /** Whether record r is still the post (ts, hash) it was scheduled for. */
  isRecord(r: number, ts: number, hash: number): boolean {
    return this.recLive[r]! > 0 && this.recTs[r] === ts && this.recHash[r] === hash;
  }

  /** The key of record r's post. */
  keyOf(r: number): string {
    return this.recKey[r]!;
  }

  /**
   * A record in no window yet (addToWindow puts it in), its arrival and expiry scheduled; the
   * caller has interned its author and topics.
   */
  create(
    key: string,
    a: number,
    topicIds: Int32Array,
    ts: number,
    hash: number,
    now: number,
  ): number {
    const r = this.freeRecords.pop() ?? this.recordCount++;
    if (r >= this.recTs.length) {
      const size = Math.max(64, r * 2);
      this.recTs = growFloat64(this.recTs, size);
      this.recHash = growInt32(this.recHash, size);
      this.recLive = growInt32(this.recLive, size);
      this.recAuthor = growInt32(this.recAuthor, size);
    }
    this.authorRecRefs[a]!++;
    for (const t of topicIds) this.topicRecRefs[t]!++;
    this.recordOf.set(key, r);
    this.recKey[r] = key;
    this.recAuthor[r] = a;
    this.recTopics[r] = topicIds;
    this.recTs[r] = ts;
    this.recHash[r] = hash;
    this.recLive[r] = 0;
    this.arrivals.scheduleRecord(ts, r, hash, now);
    return r;
  }

  /** Takes the record out of every window and frees it, without walking. */
  drop(r: number): void {
    for (const t of this.recTopics[r]!) this.removeFromWindow(t, r);
    this.free(r);
  }

  /** Inserts record r into topic t's window, by ts, unless it is there. */
  addToWindow(t: number, r: number): void {
    const ts = this.recTs[r]!;
    let tsArr = this.winTs[t];
    let recs = this.winRec[t];
    if (!tsArr || !recs) {
      tsArr = this.winTs[t] = new Float64Array(8);
      recs = this.winRec[t] = new Int32Array(8);
      this.winStart[t] = 0;
      this.winEnd[t] = 0;
    }
    const start = this.winStart[t]!;
    let end = this.winEnd[t]!;
    const at = upperBound(tsArr, start, end, ts);
    for (let i = at - 1; i >= start && tsArr[i] === ts; i--) if (recs[i] === r) return;
    if (end === tsArr.length) {
      const live = end - start;
      const size = live + 1 > tsArr.length / 2 ? tsArr.length * 2 : tsArr.length;
      const nextTs = new Float64Array(size);
      const nextRecs = new Int32Array(size);
      nextTs.set(tsArr.subarray(start, end));
      nextRecs.set(recs.subarray(start, end));
      this.winTs[t] = nextTs;
      this.winRec[t] = nextRecs;
      this.winStart[t] = 0;
      this.winEnd[t] = end = live;
      return this.addToWindow(t, r);
    }
    if (at < end) {
      tsArr.copyWithin(at + 1, at, end);
      recs.copyWithin(at + 1, at, end);
    }
    tsArr[at] = ts;
    recs[at] = r;
    this.winEnd[t] = end + 1;
    this.recLive[r]!++;
  }

  /**
   * A topic nobody held follows: its window goes, and records left in no window are freed (their
   * author's window walks them again: nobody held follows any of their topics).
   */
  forgetTopic(t: number): void {
    const recs = this.winRec[t];
    if (recs) {
      for (let i = this.winStart[t]!; i < this.winEnd[t]!; i++) {
        const r = recs[i]!;
        if (--this.recLive[r]! === 0) this.free(r);
      }
    }
    this.topicTracked[t] = 0;
    this.winTs[t] = undefined;
    this.winRec[t] = undefined;
    this.winStart[t] = 0;
    this.winEnd[t] = 0;
  }

  /** Whether no record names the topic. */
  unnamed(t: number): boolean {
    return this.topicRecRefs[t] === 0;
  }

  /**
   * The posts with after < ts ≤ until that reach a user through a topic only: in topic t's
   * window, those whose author the user does not follow (follows[start … end)) and whose first
   * topic the user follows is t.
   */
  topicOnlyCount(
    topics: Int32Array,
    follows: Int32Array,
    start: number,
    end: number,
    after: number,
    until: number,
  ): number {
    if (until <= after) return 0;
    const mark = this.nextMark();
    for (let k = start; k < end; k++) this.authorMark[follows[k]!] = mark;
    for (const t of topics) this.topicMark[t] = mark;
    let total = 0;
    for (const t of topics) {
      const tsArr = this.winTs[t];
      if (!tsArr) continue;
      const recs = this.winRec[t]!;
      const lo = this.winStart[t]!;
      const hi = this.winEnd[t]!;
      for (let i = upperBound(tsArr, lo, hi, after); i < hi && tsArr[i]! <= until; i++) {
        const r = recs[i]!;
        if (this.authorMark[this.recAuthor[r]!] === mark) continue;
        for (const other of this.recTopics[r]!) {
          if (this.topicMark[other] !== mark) continue;
          if (other === t) total++;
          break;
        }
      }
    }
    return total;
  }

  /** Frees the record; an author or topic it was the last to name, and nobody follows, goes. */
  private free(r: number): void {
    this.recordOf.delete(this.recKey[r]!);
    const a = this.recAuthor[r]!;
    if (--this.authorRecRefs[a]! === 0 && this.authorFollowers.count[a] === 0) {
      this.authors.release(a);
    }
    for (const t of this.recTopics[r]!) {
      if (--this.topicRecRefs[t]! === 0 && this.topicFollowers.count[t] === 0) {
        this.topics.release(t);
      }
    }
    this.recKey[r] = '';
    this.recTopics[r] = NO_TOPICS;
    this.recLive[r] = 0;
    this.freeRecords.push(r);
  }

  private removeFromWindow(t: number, r: number): void {
    const tsArr = this.winTs[t];
    const recs = this.winRec[t];
    if (!tsArr || !recs) return;
    const ts = this.recTs[r]!;
    const start = this.winStart[t]!;
    const end = this.winEnd[t]!;
    for (let i = upperBound(tsArr, start, end, ts) - 1; i >= start && tsArr[i] === ts; i--) {
      if (recs[i] !== r) continue;
      if (i === start) {
        this.winStart[t] = start + 1;
      } else {
        tsArr.copyWithin(i, i + 1, end);
        recs.copyWithin(i, i + 1, end);
        this.winEnd[t] = end - 1;
      }
      return;
    }
  }

  private nextMark(): number {
    if (++this.markStamp === 0x7fffffff) {
      this.authorMark.fill(0);
      this.topicMark.fill(0);
      this.markStamp = 1;
    }
    return this.markStamp;
  }
}

const NO_TOPICS = new Int32Array(0);

export function recordKey(author: string, ts: number, hash: number): string {
  return `${author}\n${ts}\n${hash}`;
}
