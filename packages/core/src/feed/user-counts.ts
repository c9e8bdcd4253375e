import { feedWindowStart } from '@bubble/protocol';
import { growFloat64, growInt32 } from '../intern-table.js';
import type { AuthorWindows } from './author-windows.js';
import type { FollowArena } from './follow-arena.js';
import type { TopicFollows } from './topic-follows.js';
import type { TopicRecords } from './topic-records.js';

/**
 * Per user: readAt, the count, whether held. The walks that move counts as posts come and go
 * (one pass over a follower list, no user × follow loop), and the recount of one user from the
 * windows when their own inputs change.
 */
export class UserCounts {
  readAt = new Float64Array(0);
  count = new Int32Array(0);
  /** 1 for ids of users held now. */
  held = new Uint8Array(0);
  /** Per user, the stamp of the last record walk that counted them (counted once per walk). */
  private walkMark = new Int32Array(0);
  private walkStamp = 0;

  constructor(
    private readonly arena: FollowArena,
    private readonly topicFollows: TopicFollows,
    private readonly windows: AuthorWindows,
    private readonly records: TopicRecords,
  ) {}

  /** Whether ids below n have room; when not, the caller grows the other parts too. */
  hasRoomFor(n: number): boolean {
    return this.readAt.length >= n;
  }

  ensureUserCapacity(n: number): void {
    this.readAt = growFloat64(this.readAt, n, -Infinity);
    this.count = growInt32(this.count, n);
    this.walkMark = growInt32(this.walkMark, n);
    const held = new Uint8Array(this.readAt.length);
    held.set(this.held);
    this.held = held;
  }

  /** A user let go: not held, nothing counted, nothing read. */
  clear(u: number): void {
    this.held[u] = 0;
    this.count[u] = 0;
    this.readAt[u] = -Infinity;
  }

  /**
   * Adds `delta` to every follower of the author for whom a post at `ts` counts (readAt < ts),
   * unless the post has a record (which walks it instead).
   */
  walkAuthorPost(a: number, ts: number, hash: number, delta: number): void {
    if (this.records.coversPost(a, ts, hash)) return;
    const followers = this.arena.followers;
    const list = followers.users[a];
    if (!list) return;
    const n = followers.count[a]!;
    const readAt = this.readAt;
    const count = this.count;
    for (let i = 0; i < n; i++) {
      const u = list[i]!;
      if (readAt[u]! < ts) count[u]! += delta;
    }
  }

  /**
   * Adds `delta` to every user the record's post reaches (followers of its author and of each
   * of its topics) for whom it counts (readAt < ts), each user once.
   */
  walkRecord(r: number, delta: number): void {
    if (++this.walkStamp === 0x7fffffff) {
      this.walkMark.fill(0);
      this.walkStamp = 1;
    }
    const stamp = this.walkStamp;
    const records = this.records;
    const ts = records.recTs[r]!;
    const readAt = this.readAt;
    const count = this.count;
    const marks = this.walkMark;
    const a = records.recAuthor[r]!;
    const authorFollowers = this.arena.followers;
    const list = authorFollowers.users[a];
    const n = list ? authorFollowers.count[a]! : 0;
    for (let i = 0; i < n; i++) {
      const u = list![i]!;
      marks[u] = stamp;
      if (readAt[u]! < ts) count[u]! += delta;
    }
    const topicFollowers = this.topicFollows.followers;
    for (const t of records.recTopics[r]!) {
      const followers = topicFollowers.users[t];
      const m = followers ? topicFollowers.count[t]! : 0;
      for (let i = 0; i < m; i++) {
        const u = followers![i]!;
        if (marks[u] === stamp) continue;
        marks[u] = stamp;
        if (readAt[u]! < ts) count[u]! += delta;
      }
    }
  }

  /** count[u] := the posts of u's feed window at `now`: O(follows × log posts). */
  recomputeAt(u: number, now: number, lookbackMs: number): void {
    this.count[u] = this.countWindows(u, feedWindowStart(this.readAt[u]!, now, lookbackMs), now);
  }

  /** The posts with after < ts ≤ until that reach u, from the windows. */
  countWindows(u: number, after: number, until: number): number {
    const arena = this.arena;
    const start = arena.followStart[u]!;
    const end = start + arena.followLen[u]!;
    const follows = arena.followAuthor;
    const windows = this.windows;
    let total = 0;
    for (let k = start; k < end; k++) total += windows.countBetween(follows[k]!, after, until);
    const topics = this.topicFollows.userTopics[u];
    if (topics) total += this.records.topicOnlyCount(topics, follows, start, end, after, until);
    return total;
  }
}
