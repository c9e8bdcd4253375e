/**
 * `bubble bench rehydrate` at tiny sizes, against the built core and server: every cold start of
 * a dropped user went to the endpoint (one request each, the user not held before it), every
 * sample's feed equals the definition (the bench throws otherwise), and after the store lost its
 * data every online user's badge is exact again with follows never re-fed (checked afresh at the
 * end, or the bench throws). Speeds are not asserted (the machine is shared); docs/benchmarks.md
 * holds those.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { benchRehydrate } from '../../packages/bench/src/rehydrate.js';
import { buildOnce } from '../support/build.js';

describe('bench rehydrate (tiny sizes)', () => {
  beforeAll(async () => {
    await buildOnce();
  }, 120_000);

  it('brings dropped users back on a cold start and refills a store that lost its data', async () => {
    const figures = await benchRehydrate({
      cold: {
        usersPerKind: 3,
        repeats: 2,
        followCounts: [20, 200],
        authors: 400,
        windowPosts: 4000,
      },
      refill: {
        users: 300,
        authors: 400,
        windowPosts: 3000,
        followMedian: 20,
        followCap: 200,
        pools: 4,
        waitSeconds: 60,
        pollMs: 100,
      },
    });
    for (const key of [
      'rehydrateColdP99Ms_200',
      'heldColdP99Ms_200',
      'rehydrateRatio',
      'refillSeconds_300',
      'refillUsersPerSec',
      'refillSecondsFromRestart',
    ]) {
      expect(typeof figures[key as keyof typeof figures], key).toBe('number');
    }
    // Warm-ups (one per dropped user and follow count) and timed samples: each its own request.
    expect(figures.droppedSamples).toBe(2 * 3 * 2);
    expect(figures.endpointRequests).toBe(figures.droppedSamples! + 2 * 3);
    expect(figures.endpointUsersPerRequest).toBe(1);
  }, 60_000);
});
