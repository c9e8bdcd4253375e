import { MemoryHeldLock } from './memory-held-lock.js';
import type { HeldLock, PoolLocks } from './pool-locks.js';

export interface MemoryPoolLocksOptions {
  /** Clock behind validUntil(); default Date.now. */
  now?: () => number;
}

/**
 * Pool locks of one process. A holder here cannot be paused or cut off while the lock lives
 * on, so a lock is simply held until released (or close()); validUntil() keeps the same
 * rolling "now + ttl" promise a self-extending lock gives.
 */
export class MemoryPoolLocks implements PoolLocks {
  private readonly now: () => number;
  private readonly held = new Map<number, MemoryHeldLock>();
  private closed = false;

  constructor(options: MemoryPoolLocksOptions = {}) {
    this.now = options.now ?? Date.now;
  }

  async tryAcquire(pool: number, ttlMs: number): Promise<HeldLock | null> {
    if (!Number.isInteger(ttlMs) || ttlMs <= 0) {
      throw new RangeError(`ttlMs must be a positive integer, got ${ttlMs}`);
    }
    if (this.closed || this.held.has(pool)) return null;
    const lock = new MemoryHeldLock(`pool:${pool}`, ttlMs, this.now, () => {
      if (this.held.get(pool) === lock) this.held.delete(pool);
    });
    this.held.set(pool, lock);
    return lock;
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.held.values()].map((lock) => lock.release()));
  }
}
