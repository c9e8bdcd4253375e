import { DAY_MS, mulberry32 } from '@bubble/protocol';
import type { AuthorSizes, BenchOptions } from './bench-options.js';

/** Draws ranks 0..n-1 with P(k) ∝ 1/(k+1)^s: a few are picked most of the time. */
export class ZipfSampler {
  private readonly cdf: Float64Array;

  constructor(
    readonly n: number,
    exponent: number,
    private readonly random: () => number,
  ) {
    this.cdf = new Float64Array(n);
    let sum = 0;
    for (let k = 0; k < n; k++) this.cdf[k] = sum += 1 / (k + 1) ** exponent;
    for (let k = 0; k < n; k++) this.cdf[k]! /= sum;
  }

  next(): number {
    const x = this.random();
    let lo = 0;
    let hi = this.n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.cdf[mid]! < x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}

export interface WorkloadOptions {
  seed: number;
  users: number;
  authors: number;
  /** Follows per user: a fixed number, or a power law with this median and cap. */
  follows: { fixed: number } | { median: number; cap: number };
  /** Posts already in the lookback window, spread over it. */
  windowPosts: number;
  now: number;
  lookbackMs?: number;
  /**
   * Who posts: `popularity` (the default) draws posting authors by the same power law as
   * follows, so the authors who post most are the most followed; `independent` draws them by
   * an equal power law over a shuffled order, so how much an author posts says nothing about
   * how many follow them.
   */
  activity?: 'popularity' | 'independent';
}

export interface Workload {
  users: string[];
  authors: string[];
  /** follows[u] = author indices */
  follows: Int32Array[];
  /** readAt[u], or null for users who never read */
  readAt: (number | null)[];
  posts: { author: number; id: string; ts: number }[];
  authorRank: ZipfSampler;
  /** The author of a new post, drawn by activity (see WorkloadOptions.activity). */
  nextPoster: () => number;
  random: () => number;
}

/**
 * The shape of docs/benchmarks.md: authors followed and posting by power laws, posts spread
 * over the lookback, read cursors spread over it too (a fifth never read).
 */
export function buildWorkload(options: WorkloadOptions): Workload {
  const random = mulberry32(options.seed);
  const lookbackMs = options.lookbackMs ?? 7 * DAY_MS;
  const authors = Array.from({ length: options.authors }, (_, i) => `a${i}`);
  const users = Array.from({ length: options.users }, (_, i) => `u${i}`);
  const authorRank = new ZipfSampler(options.authors, 0.9, random);
  const follows: Int32Array[] = [];
  const chosen = new Uint8Array(options.authors);
  for (let u = 0; u < options.users; u++) {
    const want = Math.min(followCount(options.follows, random), options.authors);
    follows.push(drawFollows(want, authorRank, random, chosen));
  }
  const nextPoster =
    options.activity === 'independent'
      ? shuffledDraw(authorRank, mulberry32(options.seed ^ 0x5bd1e995))
      : () => authorRank.next();
  const readAt = users.map(() =>
    random() < 0.2 ? null : options.now - Math.floor(random() * lookbackMs),
  );
  const posts = Array.from({ length: options.windowPosts }, (_, i) => ({
    author: nextPoster(),
    id: `w${i}`,
    ts: options.now - 1 - Math.floor(random() * (lookbackMs - 2)),
  }));
  return { users, authors, follows, readAt, posts, authorRank, nextPoster, random };
}

/**
 * `want` distinct author indices: popular authors first (by `rank`), then anyone, which keeps
 * large follow sets from stalling on duplicates. `scratch` (one byte per author, all 0) is
 * left as it was given.
 */
export function drawFollows(
  want: number,
  rank: ZipfSampler,
  random: () => number,
  scratch: Uint8Array = new Uint8Array(rank.n),
): Int32Array {
  const list = new Int32Array(want);
  let n = 0;
  while (n < want) {
    const a = n < want * 0.8 ? rank.next() : Math.floor(random() * rank.n);
    if (scratch[a] === 1) continue;
    scratch[a] = 1;
    list[n++] = a;
  }
  for (const a of list) scratch[a] = 0;
  return list;
}

/** The options a scenario builds its workload from. */
export interface ScenarioWorkloadOptions extends AuthorSizes, BenchOptions {
  users: number;
  followMedian: number;
  followCap: number;
}

/** The population the hot-path scenarios (fanout, sweep, mass-offline) run on by default. */
export const SCENARIO_WORKLOAD_DEFAULTS: ScenarioWorkloadOptions = {
  users: 100_000,
  authors: 50_000,
  windowPosts: 400_000,
  followMedian: 150,
  followCap: 2000,
  seed: 42,
  log: () => {},
};

/** A scenario's workload: power-law follows, a lookback window ending now unless overridden. */
export function buildScenarioWorkload(
  label: string,
  options: ScenarioWorkloadOptions,
  overrides: Partial<Pick<WorkloadOptions, 'now' | 'lookbackMs' | 'activity'>> = {},
): Workload {
  options.log(`${label}: building ${options.users} users, ${options.authors} authors`);
  return buildWorkload({
    seed: options.seed,
    users: options.users,
    authors: options.authors,
    follows: { median: options.followMedian, cap: options.followCap },
    windowPosts: options.windowPosts,
    now: Date.now(),
    ...overrides,
  });
}

/** The names of the authors user `u` follows. */
export function followedAuthors(workload: Workload, u: number): string[] {
  return Array.from(workload.follows[u]!, (a) => workload.authors[a]!);
}

/** The window's posts of every author that has some, by author index, in the workload's order. */
export function postsByAuthor(workload: Workload): Map<number, { id: string; ts: number }[]> {
  const byAuthor = new Map<number, { id: string; ts: number }[]>();
  for (const post of workload.posts) {
    let list = byAuthor.get(post.author);
    if (!list) byAuthor.set(post.author, (list = []));
    list.push({ id: post.id, ts: post.ts });
  }
  return byAuthor;
}

/** Authors alone (no users): who posts, and the posts their windows hold already, ending now. */
export function authorsWorkload(options: AuthorSizes): Workload {
  return buildWorkload({
    seed: options.seed,
    users: 0,
    authors: options.authors,
    follows: { fixed: 0 },
    windowPosts: options.windowPosts,
    now: Date.now(),
  });
}

/** Draws ranks by `rank` and maps them through a fixed shuffle of the authors. */
function shuffledDraw(rank: ZipfSampler, random: () => number): () => number {
  const order = Int32Array.from({ length: rank.n }, (_, i) => i);
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    const swap = order[i]!;
    order[i] = order[j]!;
    order[j] = swap;
  }
  return () => order[rank.next()]!;
}

export function followCount(shape: WorkloadOptions['follows'], random: () => number): number {
  if ('fixed' in shape) return shape.fixed;
  // Log-normal around the median, capped: a few users follow very many.
  const normal = Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
  return Math.max(1, Math.min(shape.cap, Math.round(shape.median * Math.exp(normal))));
}

/** `count` posts from distinct authors drawn by activity, stamped `ts`. */
export function postBatch(workload: Workload, count: number, ts: number, tag: string) {
  const seen = new Set<number>();
  const batch: { author: number; id: string; ts: number }[] = [];
  while (batch.length < count && seen.size < workload.authors.length) {
    const a = workload.authorRank.next();
    if (seen.has(a)) continue;
    seen.add(a);
    batch.push({ author: a, id: `${tag}-${batch.length}`, ts });
  }
  return batch;
}

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}
