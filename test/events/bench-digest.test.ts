/**
 * `bubble bench digest` at tiny sizes, against the built gateway: the figures bench.md names
 * are in the JSON, the digest looked at users and the receiver got their feed with every
 * request signed. Speeds are not asserted (the machine is shared); docs/benchmarks.md holds them.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { benchDigest } from '../../packages/bench/src/digest.js';
import { buildOnce } from '../support/build.js';

describe('bench digest (tiny sizes)', () => {
  beforeAll(async () => {
    await buildOnce();
  }, 120_000);

  it('reports the digest figures with deliveries made', async () => {
    const figures = await benchDigest({
      users: 2000,
      authors: 300,
      windowPosts: 2000,
      followMedian: 20,
      followCap: 200,
      postsPerSec: 200,
      intervalMs: 2_000,
      baselineSeconds: 0.5,
      warmupSeconds: 1,
      seconds: 3,
    });
    for (const key of [
      'digestUsersPerSec',
      'redisUsPerDigestUser',
      'deliveriesPerSec',
      'lagSeconds',
    ]) {
      expect(typeof figures[key as keyof typeof figures], key).toBe('number');
    }
    expect(figures.digestUsersPerSec).toBeGreaterThan(0);
    expect(figures.deliveriesPerSec).toBeGreaterThan(0);
    expect(figures.receiverFaults).toEqual({
      badSignature: 0,
      keyMismatch: 0,
      badBody: 0,
      duplicateAccepted: 0,
      tooManyUsers: 0,
    });
  }, 90_000);
});
