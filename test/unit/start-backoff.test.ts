/**
 * The backoff a role waits between attempts to reach its store at start: doubling from the
 * first delay up to the cap, each wait a random point in the upper half of its step (so
 * replicas restarted together spread out), never above the cap.
 */
import { describe, expect, it } from 'vitest';
import { backoffDelay } from '../../packages/cli/src/roles/wait-for-store.js';

const backoff = { initialMs: 500, maxMs: 15_000 };

describe('start backoff', () => {
  it('doubles from the first delay up to the cap', () => {
    const highest = (attempt: number) => backoffDelay(attempt, backoff, () => 1);
    expect([1, 2, 3, 4, 5, 6, 7, 100].map(highest)).toEqual([
      500, 1000, 2000, 4000, 8000, 15_000, 15_000, 15_000,
    ]);
  });

  it('keeps a random half of each step, never less', () => {
    for (const attempt of [1, 3, 9]) {
      const nominal = Math.min(backoff.maxMs, backoff.initialMs * 2 ** (attempt - 1));
      expect(backoffDelay(attempt, backoff, () => 0)).toBe(nominal / 2);
      for (let i = 0; i < 200; i++) {
        const delay = backoffDelay(attempt, backoff);
        expect(delay).toBeGreaterThanOrEqual(nominal / 2);
        expect(delay).toBeLessThanOrEqual(nominal);
      }
    }
  });
});
