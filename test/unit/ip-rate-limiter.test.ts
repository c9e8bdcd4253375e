/**
 * The per-address limiter of new WebSocket connections: a token bucket per address whose
 * Retry-After comes from the bucket, and whose memory stays bounded however many addresses come.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { IpRateLimiter } from '../../packages/gateway/src/live/ip-rate-limiter.js';

describe('IpRateLimiter', () => {
  it('allows the burst at once, then one per 1/rate seconds, and says when to retry', () => {
    const start = 1_000_000;
    const limiter = new IpRateLimiter({ perSecond: 2, burst: 3 }, start);
    for (let i = 0; i < 3; i++) expect(limiter.take('a', start).allowed).toBe(true);
    expect(limiter.take('a', start)).toEqual({ allowed: false, retryAfterSeconds: 1 });
    // another address has its own bucket
    expect(limiter.take('b', start).allowed).toBe(true);
    expect(limiter.take('a', start + 499).allowed).toBe(false);
    expect(limiter.take('a', start + 500).allowed).toBe(true);
    expect(limiter.take('a', start + 500).allowed).toBe(false);
  });

  it('Retry-After is the whole seconds until the next token at a slow rate', () => {
    const limiter = new IpRateLimiter({ perSecond: 0.1, burst: 1 }, 0);
    expect(limiter.take('a', 0).allowed).toBe(true);
    expect(limiter.take('a', 0)).toEqual({ allowed: false, retryAfterSeconds: 10 });
    expect(limiter.take('a', 4_000)).toEqual({ allowed: false, retryAfterSeconds: 6 });
    expect(limiter.take('a', 10_000).allowed).toBe(true);
  });

  it('never holds more addresses than its bound, and forgets the least recently seen', () => {
    const limiter = new IpRateLimiter({ perSecond: 0.001, burst: 2, maxAddresses: 100 }, 0);
    for (let i = 0; i < 10_000; i++) {
      expect(limiter.take(`flood-${i}`, i).allowed).toBe(true);
      expect(limiter.size).toBeLessThanOrEqual(100);
    }
    // The newest still has its bucket (one token left); the oldest was forgotten (a full one).
    expect(limiter.take('flood-9999', 10_000).allowed).toBe(true);
    expect(limiter.take('flood-9999', 10_000).allowed).toBe(false);
    expect(limiter.take('flood-0', 10_000).allowed).toBe(true);
    expect(limiter.take('flood-0', 10_000).allowed).toBe(true);
  });

  it('drops refilled buckets: quiet addresses cost nothing', () => {
    const limiter = new IpRateLimiter({ perSecond: 10, burst: 5 }, 0);
    for (let i = 0; i < 1000; i++) limiter.take(`a${i}`, 0);
    expect(limiter.size).toBe(1000);
    limiter.take('late', 2000);
    expect(limiter.size).toBe(1);
  });

  it('over any sequence, an address never gets more than burst + rate × elapsed', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 20 }),
        fc.integer({ min: 1, max: 10 }),
        fc.array(fc.integer({ min: 0, max: 300 }), { minLength: 1, maxLength: 200 }),
        (burst, perSecond, gaps) => {
          const limiter = new IpRateLimiter({ perSecond, burst }, 0);
          let now = 0;
          let allowed = 0;
          for (const gap of gaps) {
            now += gap;
            if (limiter.take('x', now).allowed) allowed++;
          }
          expect(allowed).toBeLessThanOrEqual(burst + Math.floor((perSecond * now) / 1000));
        },
      ),
    );
  });
});
