import { growInt32 } from '../intern-table.js';

/**
 * Per key (an author or a topic), the held users following it. Beside each follower, where the
 * key stands in that follower's own follow list (an offset its owner keeps stable): removing a
 * follower moves the last one into its place, and the owner fixes that one's position through
 * its offset in O(1) (a mass offline of 50k users used to scan each moved follower's follows:
 * O(follows²) a user).
 */
export class FollowerLists {
  users: (Int32Array<ArrayBuffer> | undefined)[] = [];
  count = new Int32Array(0);
  private offsets: (Int32Array<ArrayBuffer> | undefined)[] = [];
  /** The follower the last remove() moved into the freed place (-1: none), and its offset. */
  movedUser = -1;
  movedOffset = 0;

  grow(length: number): void {
    this.count = growInt32(this.count, length);
  }

  /** Appends u (the key standing at `offset` in u's list); returns where u stands. */
  add(key: number, u: number, offset: number): number {
    const n = this.count[key]!;
    let list = this.users[key];
    let offsets = this.offsets[key];
    if (!list || !offsets || list.length === n) {
      list = this.users[key] = growInt32(list ?? new Int32Array(0), n + 1);
      offsets = this.offsets[key] = resized(offsets, list.length);
    }
    list[n] = u;
    offsets[n] = offset;
    this.count[key] = n + 1;
    return n;
  }

  /** The follower standing at `at` has the key at `offset` in its list now. */
  setOffset(key: number, at: number, offset: number): void {
    this.offsets[key]![at] = offset;
  }

  /**
   * Removes the follower standing at `at` (see movedUser); returns true when that was the key's
   * last follower: its lists are gone then.
   */
  remove(key: number, at: number): boolean {
    this.movedUser = -1;
    const list = this.users[key];
    const offsets = this.offsets[key];
    if (!list || !offsets) return false;
    const last = this.count[key]! - 1;
    if (at !== last) {
      this.movedUser = list[at] = list[last]!;
      this.movedOffset = offsets[at] = offsets[last]!;
    }
    this.count[key] = last;
    if (last > 0) return false;
    this.users[key] = undefined;
    this.offsets[key] = undefined;
    return true;
  }
}

/** A copy of `array` (or zeros) exactly `length` long: kept beside a list grown by growInt32. */
function resized(array: Int32Array | undefined, length: number): Int32Array<ArrayBuffer> {
  const next = new Int32Array(length);
  if (array) next.set(array.subarray(0, Math.min(array.length, length)));
  return next;
}
