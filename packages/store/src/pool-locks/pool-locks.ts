export interface HeldLock {
  readonly resource: string;
  /** Aborted when the lock is lost (an extension failed or it expired) or released. */
  readonly signal: AbortSignal;
  /** Wall-clock ms until which the lock is known to be held; writes must stop before it. */
  validUntil(): number;
  /** Stops extending and releases it; harmless to call twice. */
  release(): Promise<void>;
}

/**
 * Exclusive, self-extending locks on pools. The Redis implementation is Redlock over a quorum
 * of independent masters; the memory one serves a single process.
 */
export interface PoolLocks {
  /** One attempt; null when another holder has the lock. Extended every ttl/3 until lost. */
  tryAcquire(pool: number, ttlMs: number): Promise<HeldLock | null>;
  close(): Promise<void>;
}

/** The part of a pino logger the Redlock engine uses. */
export interface PoolLocksLogger {
  warn(obj: object, msg: string): void;
}
