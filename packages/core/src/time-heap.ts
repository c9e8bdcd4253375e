import { growFloat64, growInt32 } from './intern-table.js';

/** A binary min-heap of (ts, author, idHash) in typed arrays: posts waiting for a moment. */
export class TimeHeap {
  private ts = new Float64Array(64);
  private author = new Int32Array(64);
  private hash = new Int32Array(64);
  private length = 0;

  get size(): number {
    return this.length;
  }

  peekTs(): number {
    return this.length > 0 ? this.ts[0]! : Infinity;
  }

  push(ts: number, author: number, hash: number): void {
    if (this.length === this.ts.length) {
      this.ts = growFloat64(this.ts, this.length + 1);
      this.author = growInt32(this.author, this.length + 1);
      this.hash = growInt32(this.hash, this.length + 1);
    }
    let i = this.length++;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (this.ts[parent]! <= ts) break;
      this.move(parent, i);
      i = parent;
    }
    this.ts[i] = ts;
    this.author[i] = author;
    this.hash[i] = hash;
  }

  /** Removes the earliest entry and hands it to `visit`. */
  pop(visit: (ts: number, author: number, hash: number) => void): void {
    if (this.length === 0) return;
    const ts = this.ts[0]!;
    const author = this.author[0]!;
    const hash = this.hash[0]!;
    const last = --this.length;
    if (last > 0) {
      const lastTs = this.ts[last]!;
      const lastAuthor = this.author[last]!;
      const lastHash = this.hash[last]!;
      let i = 0;
      for (;;) {
        let child = 2 * i + 1;
        if (child >= last) break;
        if (child + 1 < last && this.ts[child + 1]! < this.ts[child]!) child++;
        if (this.ts[child]! >= lastTs) break;
        this.move(child, i);
        i = child;
      }
      this.ts[i] = lastTs;
      this.author[i] = lastAuthor;
      this.hash[i] = lastHash;
    }
    visit(ts, author, hash);
  }

  clear(): void {
    this.length = 0;
  }

  private move(from: number, to: number): void {
    this.ts[to] = this.ts[from]!;
    this.author[to] = this.author[from]!;
    this.hash[to] = this.hash[from]!;
  }
}
