/** The synthetic platform of `bubble simulate`: deterministic, no self-follows, heavy-tailed. */
import { describe, expect, it } from 'vitest';
import { mulberry32 } from '@bubble/protocol';
import { ZipfSampler, followGraph, shuffled } from '../../packages/cli/src/sim-graph.js';

describe('bubble simulate follow graph', () => {
  it('is the same graph for the same seed, another for another seed', () => {
    const a = followGraph({ users: 500, seed: 7 });
    expect(followGraph({ users: 500, seed: 7 })).toEqual(a);
    expect(followGraph({ users: 500, seed: 8 })).not.toEqual(a);
  });

  it('has distinct, in-range authors, never the user, within the bounds', () => {
    const users = 300;
    const graph = followGraph({ users, seed: 1, minFollows: 3, maxFollows: 50 });
    expect(graph).toHaveLength(users);
    graph.forEach((authors, user) => {
      expect(new Set(authors).size).toBe(authors.length);
      expect(authors).not.toContain(user);
      expect(authors.every((a) => Number.isInteger(a) && a >= 0 && a < users)).toBe(true);
      expect(authors.length).toBeLessThanOrEqual(50);
    });
    // Two users: each can only follow the other.
    expect(followGraph({ users: 2, seed: 3 })).toEqual([[1], [0]]);
  });

  it('is heavy-tailed: a few authors have most followers, out-degrees vary widely', () => {
    const users = 2000;
    const graph = followGraph({ users, seed: 42 });
    const followers = new Array<number>(users).fill(0);
    for (const authors of graph) for (const a of authors) followers[a]!++;
    const sorted = [...followers].sort((x, y) => y - x);
    const edges = followers.reduce((x, y) => x + y, 0);
    const top1pc = sorted.slice(0, users / 100).reduce((x, y) => x + y, 0);
    expect(top1pc / edges).toBeGreaterThan(0.25);
    expect(sorted[users / 2]!).toBeLessThan(sorted[0]! / 20);
    const degrees = graph.map((a) => a.length).sort((x, y) => x - y);
    expect(degrees[0]).toBeGreaterThanOrEqual(3);
    expect(degrees[degrees.length - 1]!).toBeGreaterThan(degrees[users / 2]! * 4);
  });

  it('samples Zipf ranks in range and shuffles into a permutation', () => {
    const random = mulberry32(5);
    const zipf = new ZipfSampler(10);
    const counts = new Array<number>(10).fill(0);
    for (let i = 0; i < 10_000; i++) counts[zipf.sample(random)]!++;
    expect(counts.every((c) => c > 0)).toBe(true);
    expect(counts[0]!).toBeGreaterThan(counts[9]! * 5);
    expect(shuffled(50, mulberry32(1)).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 50 }, (_, i) => i),
    );
  });
});
