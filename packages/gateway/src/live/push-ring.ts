/**
 * The push queue's order: each held user has a slot, numbered as they came (a freed slot is
 * given again), and users with a pending frame are served in slot order from a cursor that goes
 * round, as an elevator does. Every waiting user is served within one round, as a FIFO queue
 * would within its length, and sockets are written in about the order they were opened. That
 * order is what the kernel and node write fastest: the bare `ws` sender spent 9.4 µs a frame
 * writing its sockets in the order they were opened and 11.8 µs writing them shuffled
 * (docs/benchmarks.md, "The push path, third round"); arrival order is shuffled order.
 */
export class PushRing<T> {
  private holders: (T | null)[] = [];
  private free: number[] = [];
  /** One bit a slot: a pending frame. */
  private bits = new Uint32Array(32);
  private cursor = 0;
  private waiting = 0;

  /** Slots with a pending frame. */
  get pending(): number {
    return this.waiting;
  }

  /** A slot for `holder`, until released. */
  claim(holder: T): number {
    const slot = this.free.pop() ?? this.holders.length;
    this.holders[slot] = holder;
    if (slot >= this.bits.length * 32) {
      const bits = new Uint32Array(this.bits.length * 2);
      bits.set(this.bits);
      this.bits = bits;
    }
    return slot;
  }

  /** Gives the slot up; a pending frame of it is dropped. */
  release(slot: number): void {
    this.unmark(slot);
    this.holders[slot] = null;
    this.free.push(slot);
  }

  /** Marks the slot pending; false when it already was. */
  mark(slot: number): boolean {
    const word = slot >>> 5;
    const bit = 1 << (slot & 31);
    if ((this.bits[word]! & bit) !== 0) return false;
    this.bits[word]! |= bit;
    this.waiting++;
    return true;
  }

  /** Clears the slot's pending mark; false when it had none. */
  unmark(slot: number): boolean {
    const word = slot >>> 5;
    const bit = 1 << (slot & 31);
    if ((this.bits[word]! & bit) === 0) return false;
    this.bits[word]! &= ~bit;
    this.waiting--;
    return true;
  }

  /**
   * The holder of the first pending slot at or after the cursor (going round), its mark
   * cleared and the cursor moved past it; undefined when none is pending.
   */
  next(): T | undefined {
    if (this.waiting === 0) return undefined;
    const bits = this.bits;
    const words = bits.length;
    let word = this.cursor >>> 5;
    // The first word is read from the cursor's bit on; a full round comes back to it whole.
    let mask = bits[word]! & (~0 << (this.cursor & 31));
    for (let seen = 0; mask === 0; seen++) {
      word = word + 1 === words ? 0 : word + 1;
      mask = bits[word]!;
      if (seen > words) return undefined;
    }
    const slot = (word << 5) + (31 - Math.clz32(mask & -mask));
    bits[word]! &= ~(1 << (slot & 31));
    this.waiting--;
    this.cursor = slot + 1 === words * 32 ? 0 : slot + 1;
    return this.holders[slot]!;
  }
}
