import { idHash } from '../intern-table.js';
import type { Arrivals } from './arrivals.js';
import type { AuthorWindows, WindowPost } from './author-windows.js';
import type { TopicPosts } from './topic-posts.js';
import type { UserCounts } from './user-counts.js';

/**
 * How posts reach users through the authors they follow: each post in its author's window,
 * walked over the author's followers as it comes, becomes due, expires or is deleted.
 */
export class AuthorPosts {
  constructor(
    private readonly windows: AuthorWindows,
    private readonly counts: UserCounts,
    private readonly topicPosts: TopicPosts,
  ) {}

  /** Puts a post in author a's window; walks it if due. */
  insert(a: number, ts: number, hash: number, now: number): void {
    if (this.windows.insert(a, ts, hash, now) && ts <= now) {
      this.counts.walkAuthorPost(a, ts, hash, 1);
    }
  }

  /** Takes a post out of author a's window; walks it out if it counted. */
  remove(a: number, ts: number, hash: number, now: number): void {
    const at = this.windows.find(a, ts, hash);
    if (at < 0) return;
    this.windows.removeAt(a, at);
    if (ts <= now) this.counts.walkAuthorPost(a, ts, hash, -1);
  }

  /**
   * Makes author a's window equal to the stored posts: what the store lacks is deleted (its
   * record too), what the window lacks is added, each through the usual walks. Returns how many
   * posts it had to add or remove.
   */
  reload(
    a: number,
    author: string,
    posts: readonly WindowPost[],
    now: number,
    horizon: number,
  ): number {
    const windows = this.windows;
    const stored = new Map<number, Set<number>>();
    for (const post of posts) {
      if (post.ts <= horizon) continue;
      let hashes = stored.get(post.ts);
      if (!hashes) stored.set(post.ts, (hashes = new Set()));
      hashes.add(idHash(post.id));
    }
    let repaired = 0;
    const tsArr = windows.postTs[a];
    const hashArr = windows.postHash[a];
    if (tsArr && hashArr) {
      for (let i = windows.postEnd[a]! - 1; i >= windows.postStart[a]!; i--) {
        const ts = tsArr[i]!;
        const hash = hashArr[i]!;
        if (stored.get(ts)?.delete(hash)) continue;
        windows.removeAt(a, i);
        if (ts <= now) this.counts.walkAuthorPost(a, ts, hash, -1);
        this.topicPosts.remove(author, ts, hash, now);
        repaired++;
      }
    }
    for (const post of posts) {
      if (stored.get(post.ts)?.has(idHash(post.id))) {
        this.insert(a, post.ts, idHash(post.id), now);
        repaired++;
      }
    }
    return repaired;
  }

  /** Posts that left the lookback stop counting, those whose ts has come start. */
  advance(arrivals: Arrivals, time: number, previous: number, horizon: number): void {
    while (arrivals.nextPostExpiry(horizon)) this.trim(arrivals.id, horizon, previous);
    while (arrivals.nextPostArrival(time)) {
      const { id: a, ts, hash } = arrivals;
      if (ts > horizon && this.windows.find(a, ts, hash) >= 0) {
        this.counts.walkAuthorPost(a, ts, hash, 1);
      }
    }
  }

  /** Drops a's posts with ts ≤ horizon; the counted ones (ts ≤ previous T) stop counting. */
  private trim(a: number, horizon: number, previous: number): void {
    const windows = this.windows;
    const tsArr = windows.postTs[a];
    if (!tsArr) return;
    const hashArr = windows.postHash[a]!;
    const from = windows.postStart[a]!;
    const to = windows.trim(a, horizon);
    for (let i = from; i < to; i++) {
      const ts = tsArr[i]!;
      if (ts <= previous) this.counts.walkAuthorPost(a, ts, hashArr[i]!, -1);
    }
  }
}
