import { growInt32, idHash } from '../intern-table.js';
import type { Arrivals } from './arrivals.js';
import { upperBound } from './sorted-times.js';

/** A post as a window receives it; the window keeps its ts and id hash only. */
export interface WindowPost {
  id: string;
  ts: number;
}

/**
 * Per followed author, its posts in the lookback (ts > T − L), sorted by ts in
 * postTs/postHash[postStart … postEnd): the head is trimmed as posts expire, and a full array is
 * compacted before it grows. Every post put in is scheduled with the arrivals.
 */
export class AuthorWindows {
  /** 1 once an author's stored posts have been loaded into its window. */
  tracked = new Uint8Array(0);
  postTs: (Float64Array<ArrayBuffer> | undefined)[] = [];
  postHash: (Int32Array<ArrayBuffer> | undefined)[] = [];
  postStart = new Int32Array(0);
  postEnd = new Int32Array(0);

  constructor(private readonly arrivals: Arrivals) {}

  ensureAuthorCapacity(n: number): void {
    this.postStart = growInt32(this.postStart, n);
    this.postEnd = growInt32(this.postEnd, n);
    const tracked = new Uint8Array(this.postStart.length);
    tracked.set(this.tracked);
    this.tracked = tracked;
  }

  /**
   * Merges the stored posts with ts > horizon into the window, skipping posts it already holds
   * (from the change log), recognised by (ts, id).
   */
  load(a: number, posts: readonly WindowPost[], horizon: number, now: number): void {
    const incoming = posts.filter((post) => post.ts > horizon);
    if (incoming.length === 0) return;
    incoming.sort((x, y) => x.ts - y.ts);
    const tsArr = this.postTs[a];
    const hashArr = this.postHash[a];
    const start = this.postStart[a]!;
    const end = this.postEnd[a]!;
    const size = end - start + incoming.length;
    const nextTs = new Float64Array(Math.max(8, size * 1.25) | 0);
    const nextHash = new Int32Array(nextTs.length);
    let n = 0;
    let i = start;
    let j = 0;
    while (i < end || j < incoming.length) {
      const takeOld = j >= incoming.length || (i < end && tsArr![i]! <= incoming[j]!.ts);
      if (takeOld) {
        nextTs[n] = tsArr![i]!;
        nextHash[n++] = hashArr![i++]!;
        continue;
      }
      const post = incoming[j++]!;
      const hash = idHash(post.id);
      let present = false;
      for (let k = n - 1; k >= 0 && nextTs[k] === post.ts; k--)
        if (nextHash[k] === hash) present = true;
      for (let k = i; !present && k < end && tsArr![k] === post.ts; k++)
        if (hashArr![k] === hash) present = true;
      if (present) continue;
      nextTs[n] = post.ts;
      nextHash[n++] = hash;
      this.arrivals.schedulePost(post.ts, a, hash, now);
    }
    this.postTs[a] = nextTs;
    this.postHash[a] = nextHash;
    this.postStart[a] = 0;
    this.postEnd[a] = n;
  }

  /** Puts a post in the window and schedules it; false when the window holds it already. */
  insert(a: number, ts: number, hash: number, now: number): boolean {
    let tsArr = this.postTs[a];
    let hashArr = this.postHash[a];
    if (!tsArr || !hashArr) {
      tsArr = this.postTs[a] = new Float64Array(8);
      hashArr = this.postHash[a] = new Int32Array(8);
      this.postStart[a] = 0;
      this.postEnd[a] = 0;
    }
    const start = this.postStart[a]!;
    let end = this.postEnd[a]!;
    const at = upperBound(tsArr, start, end, ts);
    for (let i = at - 1; i >= start && tsArr[i] === ts; i--) if (hashArr[i] === hash) return false;
    if (end === tsArr.length) {
      // Compact the trimmed head first; grow only when the live part is really full.
      const live = end - start;
      const size = live + 1 > tsArr.length / 2 ? tsArr.length * 2 : tsArr.length;
      const nextTs = new Float64Array(size);
      const nextHash = new Int32Array(size);
      nextTs.set(tsArr.subarray(start, end));
      nextHash.set(hashArr.subarray(start, end));
      this.postTs[a] = tsArr = nextTs;
      this.postHash[a] = hashArr = nextHash;
      this.postStart[a] = 0;
      this.postEnd[a] = end = live;
      return this.insert(a, ts, hash, now);
    }
    if (at < end) {
      tsArr.copyWithin(at + 1, at, end);
      hashArr.copyWithin(at + 1, at, end);
    }
    tsArr[at] = ts;
    hashArr[at] = hash;
    this.postEnd[a] = end + 1;
    this.arrivals.schedulePost(ts, a, hash, now);
    return true;
  }

  /** Where the post stands in the window, or -1. */
  find(a: number, ts: number, hash: number): number {
    const tsArr = this.postTs[a];
    const hashArr = this.postHash[a];
    if (!tsArr || !hashArr) return -1;
    const start = this.postStart[a]!;
    for (
      let i = upperBound(tsArr, start, this.postEnd[a]!, ts) - 1;
      i >= start && tsArr[i] === ts;
      i--
    ) {
      if (hashArr[i] === hash) return i;
    }
    return -1;
  }

  removeAt(a: number, at: number): void {
    const tsArr = this.postTs[a]!;
    const hashArr = this.postHash[a]!;
    const end = this.postEnd[a]!;
    tsArr.copyWithin(at, at + 1, end);
    hashArr.copyWithin(at, at + 1, end);
    this.postEnd[a] = end - 1;
  }

  /** Drops the head's posts with ts ≤ horizon; returns the new start (they stay readable). */
  trim(a: number, horizon: number): number {
    const tsArr = this.postTs[a]!;
    const end = this.postEnd[a]!;
    let start = this.postStart[a]!;
    while (start < end && tsArr[start]! <= horizon) start++;
    return (this.postStart[a] = start);
  }

  /** The window's posts with after < ts ≤ until. */
  countBetween(a: number, after: number, until: number): number {
    const tsArr = this.postTs[a];
    if (!tsArr || until <= after) return 0;
    const start = this.postStart[a]!;
    const end = this.postEnd[a]!;
    return upperBound(tsArr, start, end, until) - upperBound(tsArr, start, end, after);
  }

  /** Number of posts in the window, or null when not tracked. */
  size(a: number): number | null {
    return this.tracked[a] === 1 ? this.postEnd[a]! - this.postStart[a]! : null;
  }

  /** An author nobody held follows: its window goes, so memory follows what is live. */
  forget(a: number): void {
    this.tracked[a] = 0;
    this.postTs[a] = undefined;
    this.postHash[a] = undefined;
    this.postStart[a] = 0;
    this.postEnd[a] = 0;
  }
}
