import { growFloat64, growInt32 } from '../intern-table.js';

/**
 * A binary min-heap of (ts, id, idHash) in typed arrays: posts waiting for a moment, by author
 * or record id. pop() leaves the entry it took in the popped fields, so that draining the heap
 * allocates nothing.
 */
export class TimeHeap {
  private ts = new Float64Array(64);
  private id = new Int32Array(64);
  private hash = new Int32Array(64);
  private length = 0;
  /** The entry the last pop() took. */
  poppedTs = 0;
  poppedId = 0;
  poppedHash = 0;

  peekTs(): number {
    return this.length > 0 ? this.ts[0]! : Infinity;
  }

  push(ts: number, id: number, hash: number): void {
    if (this.length === this.ts.length) {
      this.ts = growFloat64(this.ts, this.length + 1);
      this.id = growInt32(this.id, this.length + 1);
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
    this.id[i] = id;
    this.hash[i] = hash;
  }

  /** Removes the earliest entry into the popped fields; false when the heap is empty. */
  pop(): boolean {
    if (this.length === 0) return false;
    this.poppedTs = this.ts[0]!;
    this.poppedId = this.id[0]!;
    this.poppedHash = this.hash[0]!;
    const last = --this.length;
    if (last > 0) {
      const lastTs = this.ts[last]!;
      const lastId = this.id[last]!;
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
      this.id[i] = lastId;
      this.hash[i] = lastHash;
    }
    return true;
  }

  private move(from: number, to: number): void {
    this.ts[to] = this.ts[from]!;
    this.id[to] = this.id[from]!;
    this.hash[to] = this.hash[from]!;
  }
}
