/**
 * Token buckets per client address: `burst` new connections at once, refilled at `perSecond`.
 * Buckets of quiet addresses are swept so memory follows the active ones.
 */
export class IpRateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private lastSweep = Date.now();

  constructor(
    private readonly perSecond: number,
    private readonly burst: number,
  ) {}

  take(ip: string, now = Date.now()): boolean {
    if (now - this.lastSweep > 60_000) this.sweep(now);
    const bucket = this.buckets.get(ip) ?? { tokens: this.burst, at: now };
    bucket.tokens = Math.min(
      this.burst,
      bucket.tokens + ((now - bucket.at) / 1000) * this.perSecond,
    );
    bucket.at = now;
    this.buckets.set(ip, bucket);
    if (bucket.tokens < 1) return false;
    bucket.tokens -= 1;
    return true;
  }

  private sweep(now: number): void {
    this.lastSweep = now;
    const full = (this.burst / this.perSecond) * 1000;
    for (const [ip, bucket] of this.buckets) if (now - bucket.at > full) this.buckets.delete(ip);
  }
}
