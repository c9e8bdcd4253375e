/** A fixed number of the latest items; pushing into a full ring drops the oldest. */
export class RingBuffer<T> {
  private readonly items: (T | undefined)[];
  private next = 0;
  private count = 0;

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) {
      throw new RangeError(`capacity must be a positive integer, got ${capacity}`);
    }
    this.items = new Array<T | undefined>(capacity);
  }

  get size(): number {
    return this.count;
  }

  push(item: T): void {
    this.items[this.next] = item;
    this.next = (this.next + 1) % this.capacity;
    this.count = Math.min(this.count + 1, this.capacity);
  }

  /** Oldest first. */
  toArray(): T[] {
    const out: T[] = [];
    const start = (this.next - this.count + this.capacity) % this.capacity;
    for (let i = 0; i < this.count; i++) out.push(this.items[(start + i) % this.capacity] as T);
    return out;
  }
}
