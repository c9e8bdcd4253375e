import { TimeHeap } from './time-heap.js';

/**
 * The moments the counter waits for: a post arriving (its ts reached: it starts counting) and a
 * post expiring (its ts left the lookback: it stops counting), for the posts of author windows
 * (by author id) and for topic records (by record id). The next*() methods take one due entry
 * into ts, id and hash, so that the counter drains them in plain loops.
 */
export class Arrivals {
  private readonly postExpiries = new TimeHeap();
  private readonly postArrivals = new TimeHeap();
  private readonly recordExpiries = new TimeHeap();
  private readonly recordArrivals = new TimeHeap();
  /** The entry the last next*() took: its ts, author or record id, and post id hash. */
  ts = 0;
  id = 0;
  hash = 0;
  /** The arrivals of one ts already taken (see takeFirstOfRun). */
  private readonly run = new Set<string>();
  private runTs = NaN;

  /** An author window's post: it expires, and arrives unless it is due already. */
  schedulePost(ts: number, author: number, hash: number, now: number): void {
    this.postExpiries.push(ts, author, hash);
    if (ts > now) this.postArrivals.push(ts, author, hash);
  }

  /** A topic record: it expires, and arrives unless it is due already. */
  scheduleRecord(ts: number, record: number, hash: number, now: number): void {
    this.recordExpiries.push(ts, record, hash);
    if (ts > now) this.recordArrivals.push(ts, record, hash);
  }

  /** The next author window holding a post with ts ≤ horizon, if any. */
  nextPostExpiry(horizon: number): boolean {
    return this.take(this.postExpiries, horizon);
  }

  /** The next author window's post with ts ≤ time, if any, each (author, post) once. */
  nextPostArrival(time: number): boolean {
    return this.takeFirstOfRun(this.postArrivals, time);
  }

  /** The next record with ts ≤ horizon, if any. */
  nextRecordExpiry(horizon: number): boolean {
    return this.take(this.recordExpiries, horizon);
  }

  /** The next record with ts ≤ time, if any, each (record, post) once. */
  nextRecordArrival(time: number): boolean {
    return this.takeFirstOfRun(this.recordArrivals, time);
  }

  private take(heap: TimeHeap, until: number): boolean {
    if (heap.peekTs() > until || !heap.pop()) return false;
    this.ts = heap.poppedTs;
    this.id = heap.poppedId;
    this.hash = heap.poppedHash;
    return true;
  }

  /**
   * A post can be scheduled twice: its author unfollowed and followed again before it is due
   * (the window reloaded), or deleted and posted again. Its entries share a ts, so they come
   * out of the heap in one run; taking each once per run is walking it once.
   */
  private takeFirstOfRun(heap: TimeHeap, until: number): boolean {
    while (this.take(heap, until)) {
      if (this.ts !== this.runTs) {
        this.runTs = this.ts;
        this.run.clear();
      }
      const key = `${this.id}:${this.hash}`;
      if (this.run.has(key)) continue;
      this.run.add(key);
      return true;
    }
    this.runTs = NaN;
    this.run.clear();
    return false;
  }
}
