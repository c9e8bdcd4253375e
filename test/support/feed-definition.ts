import { DAY_MS } from '@bubble/protocol';

/** The lookback of docs/semantics.md "Feed bubble" (the default BUBBLE_LOOKBACK_DAYS). */
export const LOOKBACK_MS = 7 * DAY_MS;

/**
 * docs/semantics.md "Feed bubble" by brute force, the definition the models check against:
 *
 *   feed(u, T) = #{ p : (author(p) ∈ follows or topics(p) ∩ topics ≠ ∅),
 *                       max(readAt, T − L) < ts(p) ≤ T, p not deleted }
 *
 * `posts` by `author/id`, with the first accepted ts (and topics); `deleted` holds the keys of
 * deleted posts; `topics` are the user's topic follows (none when left out).
 */
export function feedCount(
  posts: ReadonlyMap<string, { author: string; ts: number; topics?: readonly string[] }>,
  deleted: { has(key: string): boolean },
  follows: ReadonlySet<string>,
  readAt: number | undefined,
  T: number,
  topics: ReadonlySet<string> = new Set(),
): number {
  const lower = Math.max(readAt ?? -Infinity, T - LOOKBACK_MS);
  let count = 0;
  for (const [key, post] of posts) {
    const reaches =
      follows.has(post.author) || (post.topics ?? []).some((topic) => topics.has(topic));
    if (reaches && lower < post.ts && post.ts <= T && !deleted.has(key)) count++;
  }
  return count;
}
