import { DAY_MS } from '@bubble/protocol';

/** The lookback of docs/semantics.md "Feed bubble" (the default BUBBLE_LOOKBACK_DAYS). */
export const LOOKBACK_MS = 7 * DAY_MS;

/**
 * docs/semantics.md "Feed bubble" by brute force, the definition the models check against:
 *
 *   feed(u, T) = #{ p : author(p) ∈ follows, max(readAt, T − L) < ts(p) ≤ T, p not deleted }
 *
 * `posts` by `author/id`, with the first accepted ts; `deleted` holds the keys of deleted posts.
 */
export function feedCount(
  posts: ReadonlyMap<string, { author: string; ts: number }>,
  deleted: { has(key: string): boolean },
  follows: ReadonlySet<string>,
  readAt: number | undefined,
  T: number,
): number {
  const lower = Math.max(readAt ?? -Infinity, T - LOOKBACK_MS);
  let count = 0;
  for (const [key, post] of posts) {
    if (follows.has(post.author) && lower < post.ts && post.ts <= T && !deleted.has(key)) count++;
  }
  return count;
}
