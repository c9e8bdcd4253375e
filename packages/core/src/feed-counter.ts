import { InternTable, growFloat64, growInt32, idHash } from './intern-table.js';
import { TimeHeap } from './time-heap.js';

export interface ChangedCounts {
  /** User ids (see nameAt) whose count changed; valid until the next takeChanged(). */
  ids: Int32Array;
  counts: Int32Array;
}

/** A post as the counter keeps it: no id string, just its hash. */
export interface WindowPost {
  id: string;
  ts: number;
}

/**
 * The feed bubble of every user a core holds, kept exact incrementally.
 *
 * For each held user u it maintains
 *     count[u] = #{ posts p of authors u follows : max(readAt[u], T − L) < ts(p) ≤ T }
 * at the time T of the last advanceTo(). Posts live in per-author sorted windows (ts > T − L);
 * a reverse index (author → followers) turns a new post, a delete, a post becoming due
 * (ts reached) or expiring (ts left the lookback) into one walk over that author's followers.
 * Nothing here walks users × follows except recompute(), which is per user and used only when
 * that user's own inputs change.
 */
export class FeedCounter {
  readonly users = new InternTable();
  readonly authors = new InternTable();
  private readonly lookbackMs: number;
  private now = -Infinity;

  /**
   * Every user's follow list lives in one arena (two typed arrays, not two per user: 200k small
   * typed arrays are 400k heap objects that every major GC marks). User u's follows are
   * followAuthor[followStart[u] … + followLen[u]), followLen -1 when u has no follow set;
   * followPos holds, at the same index, where u stands in that author's follower list.
   */
  private followStart = new Int32Array(0);
  private followLen = new Int32Array(0);
  private followAuthor = new Int32Array(0);
  private followPos = new Int32Array(0);
  /** End of the used part of the arena; ranges left by replaced follow sets are garbage. */
  private arenaUsed = 0;
  private arenaLive = 0;
  private readAt = new Float64Array(0);
  private count = new Int32Array(0);
  /** The count last handed out by takeChanged(); -1 before the first time. */
  private reported = new Int32Array(0);
  /** 1 for ids of users held now. */
  private held = new Uint8Array(0);
  private changedIds = new Int32Array(0);
  private changedCounts = new Int32Array(0);

  private followers: (Int32Array<ArrayBuffer> | undefined)[] = [];
  private followerCount = new Int32Array(0);
  /** 1 once an author's stored posts have been loaded into its window. */
  private tracked = new Uint8Array(0);
  private postTs: (Float64Array<ArrayBuffer> | undefined)[] = [];
  private postHash: (Int32Array<ArrayBuffer> | undefined)[] = [];
  private postStart = new Int32Array(0);
  private postEnd = new Int32Array(0);

  private scratch = new Int32Array(0);
  /** Per author, scratch positions for setFollowsOf. */
  private scratchPos = new Int32Array(0);
  private scratchStamp = 0;

  private readonly expiries = new TimeHeap();
  private readonly arrivals = new TimeHeap();

  constructor(options: { lookbackMs: number }) {
    this.lookbackMs = options.lookbackMs;
  }

  get time(): number {
    return this.now;
  }

  get userCount(): number {
    return this.users.size;
  }

  get trackedAuthorCount(): number {
    return this.authors.size;
  }

  hasUser(user: string): boolean {
    return this.users.idOf(user) !== undefined;
  }

  countOf(user: string): number | undefined {
    const u = this.users.idOf(user);
    return u === undefined ? undefined : this.count[u];
  }

  readAtOf(user: string): number | null {
    const u = this.users.idOf(user);
    if (u === undefined) return null;
    const at = this.readAt[u]!;
    return at === -Infinity ? null : at;
  }

  followsOf(user: string): string[] {
    const u = this.users.idOf(user);
    if (u === undefined) return [];
    const start = this.followStart[u]!;
    const names: string[] = [];
    for (let k = 0; k < this.followLen[u]!; k++) {
      names.push(this.authors.nameOf(this.followAuthor[start + k]!));
    }
    return names;
  }

  /**
   * Users whose count differs from the one last handed out, with their counts. A scan of one
   * typed array: cheaper than marking users inside the follower walks.
   */
  takeChanged(): ChangedCounts {
    const capacity = this.users.capacity;
    const count = this.count;
    const reported = this.reported;
    const held = this.held;
    if (this.changedIds.length < capacity) {
      this.changedIds = new Int32Array(capacity);
      this.changedCounts = new Int32Array(capacity);
    }
    const ids = this.changedIds;
    const counts = this.changedCounts;
    let n = 0;
    for (let u = 0; u < capacity; u++) {
      const c = count[u]!;
      if (c !== reported[u] && held[u] === 1) {
        reported[u] = c;
        ids[n] = u;
        counts[n++] = c;
      }
    }
    return { ids: ids.subarray(0, n), counts: counts.subarray(0, n) };
  }

  /** Records that `count` is what the user's stored badge already shows. */
  markReported(user: string, count: number): void {
    const u = this.users.idOf(user);
    if (u !== undefined) this.reported[u] = count;
  }

  /** Names of takeChanged() ids. */
  nameAt(id: number): string {
    return this.users.nameOf(id);
  }

  /**
   * Moves the counter's clock to T: posts whose ts has come count from now on, posts that left
   * the lookback stop counting. Time never moves back.
   */
  advanceTo(time: number): void {
    if (time <= this.now) return;
    const previous = this.now;
    this.now = time;
    const horizon = time - this.lookbackMs;
    while (this.expiries.peekTs() <= horizon) {
      this.expiries.pop((_ts, author) => this.trimAuthor(author, horizon, previous));
    }
    while (this.arrivals.peekTs() <= time) {
      this.arrivals.pop((ts, author, hash) => {
        if (ts > horizon && this.findPost(author, ts, hash) >= 0) this.walk(author, ts, 1);
      });
    }
  }

  /**
   * Adds or replaces a user. Returns the authors whose posts must be loaded (loadAuthor) before
   * the user's count is right; recompute() the user afterwards.
   */
  setUser(user: string, follows: readonly string[], readAt: number | null): string[] {
    const fresh = this.users.idOf(user) === undefined;
    const u = this.users.intern(user);
    this.ensureUserCapacity(u + 1);
    this.readAt[u] = readAt ?? -Infinity;
    if (fresh) this.reported[u] = -1;
    this.held[u] = 1;
    return this.setFollowsOf(u, follows);
  }

  /** Replaces the user's follow set; returns authors to load, as setUser. */
  setFollows(user: string, follows: readonly string[]): string[] {
    const u = this.users.idOf(user);
    return u === undefined ? [] : this.setFollowsOf(u, follows);
  }

  /** readAt := max(readAt, at), then the count is recomputed. */
  advanceReadAt(user: string, at: number): void {
    const u = this.users.idOf(user);
    if (u === undefined || at <= this.readAt[u]!) return;
    this.readAt[u] = at;
    this.recomputeId(u);
  }

  removeUser(user: string): void {
    const u = this.users.idOf(user);
    if (u === undefined) return;
    const start = this.followStart[u]!;
    const length = this.followLen[u]!;
    for (let k = start; k < start + length; k++) {
      this.removeFollower(this.followAuthor[k]!, this.followPos[k]!);
    }
    if (length > 0) this.arenaLive -= length;
    this.followLen[u] = -1;
    this.held[u] = 0;
    this.count[u] = 0;
    this.readAt[u] = -Infinity;
    this.users.release(u);
  }

  /** Authors that are followed but whose posts are not loaded yet. */
  isAuthorLoaded(author: string): boolean {
    const a = this.authors.idOf(author);
    return a !== undefined && this.tracked[a] === 1;
  }

  /**
   * Fills an author's window from the stored posts. Posts already present (from the change log)
   * are recognised by (ts, id) and not counted twice. Followers must be recomputed afterwards.
   */
  loadAuthor(author: string, posts: readonly WindowPost[]): void {
    const a = this.authors.idOf(author);
    if (a === undefined || this.followerCount[a] === 0) return;
    this.tracked[a] = 1;
    const horizon = this.now - this.lookbackMs;
    const incoming = posts.filter((post) => post.ts > horizon);
    if (incoming.length === 0) return;
    incoming.sort((x, y) => x.ts - y.ts);
    const tsArr = this.postTs[a];
    const start = this.postStart[a]!;
    const end = this.postEnd[a]!;
    const size = end - start + incoming.length;
    const nextTs = new Float64Array(Math.max(8, size * 1.25) | 0);
    const nextHash = new Int32Array(nextTs.length);
    let n = 0;
    let i = start;
    let j = 0;
    // Merge the sorted window with the sorted load, skipping posts the window already holds.
    while (i < end || j < incoming.length) {
      const takeOld = j >= incoming.length || (i < end && tsArr![i]! <= incoming[j]!.ts);
      if (takeOld) {
        nextTs[n] = tsArr![i]!;
        nextHash[n++] = this.postHash[a]![i++]!;
        continue;
      }
      const post = incoming[j++]!;
      const hash = idHash(post.id);
      let present = false;
      for (let k = n - 1; k >= 0 && nextTs[k] === post.ts; k--)
        if (nextHash[k] === hash) present = true;
      for (let k = i; !present && k < end && tsArr![k] === post.ts; k++)
        if (this.postHash[a]![k] === hash) present = true;
      if (present) continue;
      nextTs[n] = post.ts;
      nextHash[n++] = hash;
      this.expiries.push(post.ts, a, hash);
      if (post.ts > this.now) this.arrivals.push(post.ts, a, hash);
    }
    this.postTs[a] = nextTs;
    this.postHash[a] = nextHash;
    this.postStart[a] = 0;
    this.postEnd[a] = n;
  }

  /** Number of posts in the author's window (ts > T − L), or null when not tracked. */
  windowSize(author: string): number | null {
    const a = this.authors.idOf(author);
    if (a === undefined || this.tracked[a] !== 1) return null;
    return this.postEnd[a]! - this.postStart[a]!;
  }

  /**
   * Makes an author's window equal to the stored posts, repairing a missed post or delete: what
   * the store lacks is deleted, what the window lacks is added, each through the usual walks.
   * Returns how many posts it had to add or remove.
   */
  reloadAuthor(author: string, posts: readonly WindowPost[]): number {
    const a = this.authors.idOf(author);
    if (a === undefined || this.tracked[a] !== 1) return 0;
    const horizon = this.now - this.lookbackMs;
    const stored = new Map<number, Set<number>>();
    for (const post of posts) {
      if (post.ts <= horizon) continue;
      let hashes = stored.get(post.ts);
      if (!hashes) stored.set(post.ts, (hashes = new Set()));
      hashes.add(idHash(post.id));
    }
    let repaired = 0;
    const tsArr = this.postTs[a];
    const hashArr = this.postHash[a];
    if (tsArr && hashArr) {
      for (let i = this.postEnd[a]! - 1; i >= this.postStart[a]!; i--) {
        const ts = tsArr[i]!;
        const hashes = stored.get(ts);
        if (hashes?.delete(hashArr[i]!)) continue;
        this.removeAt(a, i);
        if (ts <= this.now) this.walk(a, ts, -1);
        repaired++;
      }
    }
    for (const post of posts) {
      if (stored.get(post.ts)?.has(idHash(post.id))) {
        this.insertPost(a, post.ts, idHash(post.id), true);
        repaired++;
      }
    }
    return repaired;
  }

  /**
   * The user's posts with afterTs < ts ≤ untilTs in the windows held (pending ones included),
   * whatever their count says: what reconciliation compares with the stored posts.
   */
  windowCount(user: string, afterTs: number, untilTs: number): number | undefined {
    const u = this.users.idOf(user);
    if (u === undefined) return undefined;
    let total = 0;
    const start = this.followStart[u]!;
    for (let k = start; k < start + this.followLen[u]!; k++) {
      total += this.countBetween(this.followAuthor[k]!, afterTs, untilTs);
    }
    return total;
  }

  /** Recomputes one user from the windows: O(follows × log posts). */
  recompute(user: string): void {
    const u = this.users.idOf(user);
    if (u !== undefined) this.recomputeId(u);
  }

  /** A new post from the change log. Ignored unless a held user follows its author. */
  addPost(author: string, id: string, ts: number): void {
    const a = this.authors.idOf(author);
    if (a === undefined || this.tracked[a] !== 1) return;
    if (ts <= this.now - this.lookbackMs) return;
    this.insertPost(a, ts, idHash(id), true);
  }

  deletePost(author: string, id: string, ts: number): void {
    const a = this.authors.idOf(author);
    if (a === undefined || this.tracked[a] !== 1) return;
    const at = this.findPost(a, ts, idHash(id));
    if (at < 0) return;
    this.removeAt(a, at);
    if (ts <= this.now) this.walk(a, ts, -1);
  }

  /** Every held user, for reconciliation and pool hand-over. */
  heldUsers(): string[] {
    const out: string[] = [];
    for (let u = 0; u < this.users.capacity; u++) {
      if (this.followLen[u]! >= 0 || this.count[u] !== 0) out.push(this.users.nameOf(u));
    }
    return out;
  }

  private setFollowsOf(u: number, follows: readonly string[]): string[] {
    const seen = this.scratchMark();
    const next = new Int32Array(follows.length);
    const toLoad: string[] = [];
    let n = 0;
    for (const name of follows) {
      const a = this.authors.intern(name);
      this.ensureAuthorCapacity(a + 1);
      this.scratch = growInt32(this.scratch, a + 1);
      if (this.scratch[a] === seen) continue;
      this.scratch[a] = seen;
      next[n++] = a;
    }
    // Allocated first: making room may move the old range (read below) within the arena.
    const at = this.allocateFollows(n);
    const oldStart = this.followStart[u]!;
    const oldLength = this.followLen[u]!;
    const authors = this.followAuthor;
    const positions = this.followPos;
    if (oldLength > 0) {
      // Where u stands in each old author's list, by author (scratchPos), for those kept.
      const stillFollowed = this.scratchMark();
      for (let k = 0; k < n; k++) this.scratch[next[k]!] = stillFollowed;
      this.scratchPos = growInt32(this.scratchPos, this.scratch.length);
      for (let k = oldStart; k < oldStart + oldLength; k++) {
        const a = authors[k]!;
        if (this.scratch[a] === stillFollowed) this.scratchPos[a] = positions[k]!;
        else this.removeFollower(a, positions[k]!);
      }
      const wasFollowed = this.scratchMark();
      for (let k = oldStart; k < oldStart + oldLength; k++) this.scratch[authors[k]!] = wasFollowed;
      for (let k = 0; k < n; k++) {
        const a = next[k]!;
        authors[at + k] = a;
        positions[at + k] =
          this.scratch[a] === wasFollowed ? this.scratchPos[a]! : this.addFollower(a, u);
      }
      this.arenaLive -= oldLength;
    } else {
      for (let k = 0; k < n; k++) {
        authors[at + k] = next[k]!;
        positions[at + k] = this.addFollower(next[k]!, u);
      }
    }
    this.followStart[u] = at;
    this.followLen[u] = n;
    for (let k = 0; k < n; k++) {
      if (this.tracked[next[k]!] !== 1) toLoad.push(this.authors.nameOf(next[k]!));
    }
    return toLoad;
  }

  /**
   * Room for `length` follows at the end of the arena. When it is full, the live ranges are
   * copied into a new arena twice their size, in user order: garbage goes, amortised O(1).
   */
  private allocateFollows(length: number): number {
    if (this.arenaUsed + length > this.followAuthor.length) {
      const size = Math.max(1024, 2 * (this.arenaLive + length));
      const authors = new Int32Array(size);
      const positions = new Int32Array(size);
      let used = 0;
      for (let u = 0; u < this.followLen.length; u++) {
        const l = this.followLen[u]!;
        if (l <= 0) continue;
        const start = this.followStart[u]!;
        authors.set(this.followAuthor.subarray(start, start + l), used);
        positions.set(this.followPos.subarray(start, start + l), used);
        this.followStart[u] = used;
        used += l;
      }
      this.followAuthor = authors;
      this.followPos = positions;
      this.arenaUsed = used;
    }
    const at = this.arenaUsed;
    this.arenaUsed += length;
    this.arenaLive += length;
    return at;
  }

  /** A fresh stamp for the per-author scratch marks: set membership without allocating a Set. */
  private scratchMark(): number {
    if (++this.scratchStamp === 0x7fffffff) {
      this.scratch.fill(0);
      this.scratchStamp = 1;
    }
    return this.scratchStamp;
  }

  private recomputeId(u: number): void {
    const start = this.followStart[u]!;
    const end = start + this.followLen[u]!;
    const after = Math.max(this.readAt[u]!, this.now - this.lookbackMs);
    let total = 0;
    for (let k = start; k < end; k++) {
      total += this.countBetween(this.followAuthor[k]!, after, this.now);
    }
    this.count[u] = total;
  }

  /** Adds `delta` to every follower for whom a post at `ts` counts (readAt < ts). */
  private walk(a: number, ts: number, delta: number): void {
    const list = this.followers[a];
    if (!list) return;
    const n = this.followerCount[a]!;
    const readAt = this.readAt;
    const count = this.count;
    for (let i = 0; i < n; i++) {
      const u = list[i]!;
      if (readAt[u]! < ts) count[u]! += delta;
    }
  }

  private insertPost(a: number, ts: number, hash: number, countIt: boolean): void {
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
    for (let i = at - 1; i >= start && tsArr[i] === ts; i--) if (hashArr[i] === hash) return;
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
      return this.insertPost(a, ts, hash, countIt);
    }
    if (at < end) {
      tsArr.copyWithin(at + 1, at, end);
      hashArr.copyWithin(at + 1, at, end);
    }
    tsArr[at] = ts;
    hashArr[at] = hash;
    this.postEnd[a] = end + 1;
    this.expiries.push(ts, a, hash);
    if (ts > this.now) this.arrivals.push(ts, a, hash);
    else if (countIt) this.walk(a, ts, 1);
  }

  private findPost(a: number, ts: number, hash: number): number {
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

  private removeAt(a: number, at: number): void {
    const tsArr = this.postTs[a]!;
    const hashArr = this.postHash[a]!;
    const end = this.postEnd[a]!;
    tsArr.copyWithin(at, at + 1, end);
    hashArr.copyWithin(at, at + 1, end);
    this.postEnd[a] = end - 1;
  }

  /** Drops posts with ts ≤ horizon; those that were counted (ts ≤ previous T) stop counting. */
  private trimAuthor(a: number, horizon: number, previous: number): void {
    const tsArr = this.postTs[a];
    if (!tsArr) return;
    let start = this.postStart[a]!;
    const end = this.postEnd[a]!;
    while (start < end && tsArr[start]! <= horizon) {
      const ts = tsArr[start++]!;
      if (ts <= previous) this.walk(a, ts, -1);
    }
    this.postStart[a] = start;
  }

  private countBetween(a: number, after: number, until: number): number {
    const tsArr = this.postTs[a];
    if (!tsArr || until <= after) return 0;
    const start = this.postStart[a]!;
    const end = this.postEnd[a]!;
    return upperBound(tsArr, start, end, until) - upperBound(tsArr, start, end, after);
  }

  /** Appends u to a's followers; returns where it stands. */
  private addFollower(a: number, u: number): number {
    const n = this.followerCount[a]!;
    let list = this.followers[a];
    if (!list || list.length === n) {
      list = this.followers[a] = growInt32(list ?? new Int32Array(0), n + 1);
    }
    list[n] = u;
    this.followerCount[a] = n + 1;
    return n;
  }

  /**
   * Removes the follower standing at `at` in a's list: the last one moves there, and its own
   * position for a is found among its follows (O(its follows), never O(a's followers)).
   */
  private removeFollower(a: number, at: number): void {
    const list = this.followers[a];
    if (!list) return;
    const last = this.followerCount[a]! - 1;
    if (at !== last) {
      const moved = list[last]!;
      list[at] = moved;
      const start = this.followStart[moved]!;
      const end = start + this.followLen[moved]!;
      for (let k = start; k < end; k++) {
        if (this.followAuthor[k] === a) {
          this.followPos[k] = at;
          break;
        }
      }
    }
    this.followerCount[a] = last;
    if (last === 0) this.untrack(a);
  }

  /** An author nobody held follows: forget its window so memory follows what is live. */
  private untrack(a: number): void {
    this.tracked[a] = 0;
    this.postTs[a] = undefined;
    this.postHash[a] = undefined;
    this.postStart[a] = 0;
    this.postEnd[a] = 0;
    this.followers[a] = undefined;
    this.authors.release(a);
  }

  private ensureUserCapacity(n: number): void {
    if (this.readAt.length >= n) return;
    this.readAt = growFloat64(this.readAt, n, -Infinity);
    this.count = growInt32(this.count, n);
    this.reported = growInt32(this.reported, n);
    this.followStart = growInt32(this.followStart, n);
    this.followLen = growInt32(this.followLen, n, -1);
    const held = new Uint8Array(this.readAt.length);
    held.set(this.held);
    this.held = held;
  }

  private ensureAuthorCapacity(n: number): void {
    if (this.followerCount.length >= n) return;
    this.followerCount = growInt32(this.followerCount, n);
    this.postStart = growInt32(this.postStart, n);
    this.postEnd = growInt32(this.postEnd, n);
    const tracked = new Uint8Array(this.followerCount.length);
    tracked.set(this.tracked);
    this.tracked = tracked;
  }
}

/** First index in [lo, hi) whose value is > x. */
function upperBound(sorted: Float64Array, lo: number, hi: number, x: number): number {
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
