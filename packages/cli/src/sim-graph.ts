/**
 * The synthetic platform of `bubble simulate`: Zipf-distributed author popularity and a power-law
 * follow graph, drawn from the shared seeded PRNG (mulberry32, @bubble/protocol). Pure and deterministic: one seed, one graph.
 */

import { mulberry32 } from '@bubble/protocol';

/** Samples indexes 0..n-1 with probability ∝ 1 / (i + 1)^s (index 0 the most popular). */
export class ZipfSampler {
  private readonly cumulative: Float64Array;

  constructor(n: number, s = 1.1) {
    if (!Number.isInteger(n) || n < 1) throw new RangeError('n must be a positive integer');
    this.cumulative = new Float64Array(n);
    let sum = 0;
    for (let i = 0; i < n; i++) {
      sum += 1 / Math.pow(i + 1, s);
      this.cumulative[i] = sum;
    }
  }

  sample(random: () => number): number {
    const c = this.cumulative;
    const target = random() * c[c.length - 1]!;
    let lo = 0;
    let hi = c.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (c[mid]! <= target) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}

export interface GraphOptions {
  users: number;
  seed: number;
  /** Fewest and most authors one user follows (the most is also bounded by users − 1). */
  minFollows?: number;
  maxFollows?: number;
  /** Pareto shape of the out-degree; smaller is heavier-tailed. */
  degreeShape?: number;
}

/**
 * follows[u] = the distinct authors u follows (never u). Out-degrees are Pareto-distributed from
 * `minFollows`, capped; whom to follow is drawn by Zipf popularity, so a few authors have most of
 * the followers — the in-degree is a power law too.
 */
export function followGraph(options: GraphOptions): number[][] {
  const { users, seed } = options;
  const minFollows = options.minFollows ?? 3;
  const maxFollows = Math.min(options.maxFollows ?? 100, users - 1);
  const shape = options.degreeShape ?? 1.2;
  const random = mulberry32(seed);
  const popularity = new ZipfSampler(users);
  const graph: number[][] = [];
  for (let user = 0; user < users; user++) {
    const pareto = Math.floor(minFollows * Math.pow(1 - random(), -1 / shape));
    const degree = Math.max(0, Math.min(maxFollows, pareto));
    const chosen = new Set<number>();
    // Bounded tries: with few users the popular authors are quickly exhausted.
    for (let tries = 0; chosen.size < degree && tries < degree * 20 + 20; tries++) {
      const author = popularity.sample(random);
      if (author !== user) chosen.add(author);
    }
    graph.push([...chosen].sort((a, b) => a - b));
  }
  return graph;
}

/** A seeded Fisher–Yates shuffle of 0..n-1. */
export function shuffled(n: number, random: () => number): number[] {
  const out = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}
