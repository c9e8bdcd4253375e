/**
 * The platform of the sources tests: its follow graph (what its sources endpoint answers) and
 * its posts, seeded at random, and the feed of docs/semantics.md "Feed bubble" over them by
 * brute force (feed-definition.ts): "Where a user's sources live" says a user's counts are those
 * of the definition with the endpoint's answer as Follows(u) and Topics(u).
 */
import { DAY_MS } from '@bubble/protocol';
import type { SourcesGraphEntry } from '@bubble/test-utils';
import { feedCount, LOOKBACK_MS } from './feed-definition.js';

/** The HMAC key the endpoint checks and bubble signs with (≥ 32 bytes). */
export const SOURCES_SECRET = 'sources-suite-secret-9d2f7a41c6e8b3052f1a';

export interface PlatformPost {
  author: string;
  id: string;
  ts: number;
  topics?: string[];
}

export interface GraphShape {
  users: readonly string[];
  authors: readonly string[];
  topics: readonly string[];
  /** Most follows (and topic follows) of one user. */
  maxFollows?: number;
  maxTopics?: number;
}

/** What the platform holds: the endpoint answers from `graph`; `posts` were fed to bubble. */
export class Platform {
  readonly graph = new Map<string, SourcesGraphEntry>();
  readonly posts = new Map<string, PlatformPost>();
  private readonly deleted = new Set<string>();

  /** feed(u, T) over the graph's entry of `user` (none: follows nothing); `readAt` overrides. */
  feed(user: string, T: number, readAt?: number | null): number {
    const entry = this.graph.get(user);
    const cursor = readAt === undefined ? entry?.readAt : (readAt ?? undefined);
    return this.feedOver(entry?.follows ?? [], entry?.topics ?? [], T, cursor);
  }

  /** feed(u, T) over explicit sources (a held set the test changed on top of the answer). */
  feedOver(
    follows: Iterable<string>,
    topics: Iterable<string>,
    T: number,
    readAt?: number,
  ): number {
    return feedCount(this.posts, this.deleted, new Set(follows), readAt, T, new Set(topics));
  }

  addPosts(posts: readonly PlatformPost[]): void {
    for (const post of posts) {
      const key = `${post.author}/${post.id}`;
      if (!this.posts.has(key)) this.posts.set(key, post);
    }
  }

  /** The posts in batches of POST /v1/posts (≤ 500 a call). */
  postBatches(size = 500): PlatformPost[][] {
    const all = [...this.posts.values()];
    const batches: PlatformPost[][] = [];
    for (let i = 0; i < all.length; i += size) batches.push(all.slice(i, i + size));
    return batches;
  }
}

/** `n` ids `<prefix>0…`. */
export function idList(prefix: string, n: number): string[] {
  return Array.from({ length: n }, (_, i) => `${prefix}${i}`);
}

function sample<T>(rand: () => number, list: readonly T[], n: number): T[] {
  const copy = [...list];
  const out: T[] = [];
  while (out.length < n && copy.length > 0) {
    out.push(copy.splice(Math.floor(rand() * copy.length), 1)[0]!);
  }
  return out;
}

/**
 * A random graph over `shape`: each user follows 0..maxFollows authors and 0..maxTopics topics;
 * about one user in eight is left out (the endpoint then answers nothing for them: they follow
 * nothing); some carry the platform's own `readAt` within the last two days.
 */
export function randomGraph(
  rand: () => number,
  shape: GraphShape,
  now: number,
): Map<string, SourcesGraphEntry> {
  const graph = new Map<string, SourcesGraphEntry>();
  for (const user of shape.users) {
    if (rand() < 0.125) continue;
    const follows = sample(rand, shape.authors, Math.floor(rand() * ((shape.maxFollows ?? 6) + 1)));
    const topics = sample(rand, shape.topics, Math.floor(rand() * ((shape.maxTopics ?? 2) + 1)));
    const entry: SourcesGraphEntry = { follows, topics };
    if (rand() < 0.3) entry.readAt = Math.floor(now - rand() * 2 * DAY_MS);
    graph.set(user, entry);
  }
  return graph;
}

/**
 * `count` posts by `authors` at or before `now`: most within the last `maxAgeMs` (the lookback
 * but a minute by default), some older than the lookback (ignored by bubble, and by the
 * definition), a third carrying a topic or two.
 */
export function randomPosts(
  rand: () => number,
  authors: readonly string[],
  topics: readonly string[],
  now: number,
  count: number,
  options: { idPrefix?: string; maxAgeMs?: number } = {},
): PlatformPost[] {
  const { idPrefix = 'p', maxAgeMs = LOOKBACK_MS - 60_000 } = options;
  return Array.from({ length: count }, (_, i) => {
    const age = rand() < 0.85 ? 1 + Math.floor(rand() * maxAgeMs) : LOOKBACK_MS + DAY_MS;
    const post: PlatformPost = {
      author: authors[Math.floor(rand() * authors.length)]!,
      id: `${idPrefix}${i}`,
      ts: now - age,
    };
    if (rand() < 0.33 && topics.length > 0) post.topics = sample(rand, topics, 1 + (i % 2));
    return post;
  });
}
