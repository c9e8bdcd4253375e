import type { Workload } from './workload.js';

/**
 * docs/semantics.md "Feed bubble" over a workload's posts (none deleted, no topics), by binary
 * search in each author's sorted timestamps: what the benches check stored and served badges
 * against.
 *
 *   feed(u, T) = #{ p : author(p) ∈ follows, max(readAt, T − L) < ts(p) ≤ T }
 */
export class FeedDefinition {
  private readonly stamps: Float64Array[];
  private readonly indexOf: Map<string, number>;

  constructor(
    workload: Workload,
    private readonly lookbackMs: number,
  ) {
    const lists: number[][] = workload.authors.map(() => []);
    for (const post of workload.posts) lists[post.author]!.push(post.ts);
    this.stamps = lists.map((list) => Float64Array.from(list).sort());
    this.indexOf = new Map(workload.authors.map((name, i) => [name, i]));
  }

  /** The feed of a user following `follows` (author names) with this read cursor, at T. */
  feed(follows: readonly string[], readAt: number | null, T: number): number {
    const indices = follows.map((name) => {
      const index = this.indexOf.get(name);
      if (index === undefined) throw new Error(`feed definition: unknown author ${name}`);
      return index;
    });
    return this.feedOf(indices, readAt, T);
  }

  /** The same, by author index. */
  feedOf(follows: ArrayLike<number>, readAt: number | null, T: number): number {
    const lower = Math.max(readAt ?? -Infinity, T - this.lookbackMs);
    let count = 0;
    for (let i = 0; i < follows.length; i++) {
      const stamps = this.stamps[follows[i]!]!;
      count += countAtMost(stamps, T) - countAtMost(stamps, lower);
    }
    return count;
  }
}

/** How many of the sorted `stamps` are ≤ `x`. */
function countAtMost(stamps: Float64Array, x: number): number {
  let lo = 0;
  let hi = stamps.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (stamps[mid]! <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
