export interface IpRateLimiterOptions {
  /** Tokens added per second (BUBBLE_WS_CONNECT_RATE). */
  perSecond: number;
  /** Most tokens a bucket holds, the burst (BUBBLE_WS_CONNECT_BURST). */
  burst: number;
  /** Most addresses tracked at once; past it the least recently seen are forgotten. */
  maxAddresses?: number;
}

/** `allowed`, or when not the whole seconds until the next token (for `Retry-After`). */
export type TakeResult = { allowed: true } | { allowed: false; retryAfterSeconds: number };

interface Bucket {
  tokens: number;
  at: number;
}

/**
 * Token buckets per client address: `burst` new connections at once, refilled at `perSecond`.
 * Memory follows the active addresses: a bucket that has refilled is the same as no bucket and
 * is dropped by the sweep, and at `maxAddresses` the least recently seen are forgotten (the Map
 * keeps the order of use), so a flood of addresses cannot grow it without bound nor slow it.
 */
export class IpRateLimiter {
  private readonly buckets = new Map<string, Bucket>();
  private readonly perSecond: number;
  private readonly burst: number;
  private readonly maxAddresses: number;
  private readonly refillMs: number;
  private lastSweep: number;

  constructor(options: IpRateLimiterOptions, now = Date.now()) {
    if (!(options.perSecond > 0)) throw new Error('perSecond must be positive');
    if (!(options.burst >= 1)) throw new Error('burst must be at least 1');
    this.perSecond = options.perSecond;
    this.burst = options.burst;
    this.maxAddresses = options.maxAddresses ?? 100_000;
    this.refillMs = (this.burst / this.perSecond) * 1000;
    this.lastSweep = now;
  }

  get size(): number {
    return this.buckets.size;
  }

  take(key: string, now = Date.now()): TakeResult {
    if (now - this.lastSweep > 1000) this.sweep(now);
    const existing = this.buckets.get(key);
    const bucket = existing ?? { tokens: this.burst, at: now };
    const elapsed = Math.max(0, now - bucket.at);
    bucket.tokens = Math.min(this.burst, bucket.tokens + (elapsed / 1000) * this.perSecond);
    bucket.at = now;
    // Re-inserted so the Map's first entries are the least recently seen.
    if (existing) this.buckets.delete(key);
    else if (this.buckets.size >= this.maxAddresses) this.makeRoom(now);
    this.buckets.set(key, bucket);
    if (bucket.tokens < 1) {
      return {
        allowed: false,
        retryAfterSeconds: Math.max(1, Math.ceil((1 - bucket.tokens) / this.perSecond)),
      };
    }
    bucket.tokens -= 1;
    return { allowed: true };
  }

  /**
   * At the bound: the refilled buckets go, and if that is not enough the least recently seen
   * tenth. In batches, because V8 leaves deleted Map entries in place until it rehashes, so a
   * walk from the front costs every deletion before it: one at a time it would cost O(n) each.
   */
  private makeRoom(now: number): void {
    this.sweep(now);
    if (this.buckets.size < this.maxAddresses) return;
    let excess = this.buckets.size - this.maxAddresses + Math.ceil(this.maxAddresses / 10);
    for (const key of this.buckets.keys()) {
      if (excess-- <= 0) break;
      this.buckets.delete(key);
    }
  }

  /**
   * Drops the buckets that have refilled since they were last used. The Map is in order of
   * use, so the walk stops at the first bucket still refilling: the cost is what it removes.
   */
  private sweep(now: number): void {
    this.lastSweep = now;
    for (const [key, bucket] of this.buckets) {
      if (now - bucket.at < this.refillMs) break;
      this.buckets.delete(key);
    }
  }
}
