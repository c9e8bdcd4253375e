// Brings redlock's ambient types into every program compiling this file, not only the store's
// own project (e.g. test/tsconfig.json); a global declaration file cannot be imported.
// eslint-disable-next-line @typescript-eslint/triple-slash-reference
/// <reference path="./redlock.d.ts" />
import type { Redis } from 'ioredis';
import Redlock, { ExecutionError, ResourceLockedError, type Lock } from 'redlock';
import type { RedisKeys } from '../redis/keys.js';
import type { HeldLock, PoolLocks, PoolLocksLogger } from './pool-locks.js';
import { ignore, RedlockHeldLock, releaseQuietly, settleWithin } from './redlock-held-lock.js';

export interface RedlockPoolLocksOptions {
  /**
   * Independent masters (not replicas of one another) whose majority grants a lock; one is
   * allowed. Not closed here. Create them with `enableOfflineQueue: false`, so a server that is
   * down votes against at once instead of holding the command until it comes back.
   */
  clients: readonly Redis[];
  keys: RedisKeys;
  /** Share of the ttl set aside for clock drift between the servers and this process (0.01). */
  driftFactor?: number;
  logger?: PoolLocksLogger;
}

/**
 * Pool locks granted by Redlock over a quorum of Redis masters. Each held lock extends itself
 * every ttl/3 and counts as lost, aborting its signal, as soon as an extension fails or the
 * lock's conservative expiry passes without one.
 */
export class RedlockPoolLocks implements PoolLocks {
  private readonly redlock: Redlock;
  private readonly keys: RedisKeys;
  private readonly logger: PoolLocksLogger | undefined;
  private readonly held = new Set<RedlockHeldLock>();
  private closed = false;

  constructor(options: RedlockPoolLocksOptions) {
    if (options.clients.length === 0) throw new Error('clients must hold at least one Redis');
    // One attempt per call: the caller decides when to try again.
    this.redlock = new Redlock(options.clients, {
      driftFactor: options.driftFactor ?? 0.01,
      retryCount: 0,
    });
    this.keys = options.keys;
    this.logger = options.logger;
  }

  async tryAcquire(pool: number, ttlMs: number): Promise<HeldLock | null> {
    if (!Number.isInteger(ttlMs) || ttlMs <= 0) {
      throw new RangeError(`ttlMs must be a positive integer, got ${ttlMs}`);
    }
    if (this.closed) return null;
    const resource = this.keys.poolLock(pool);
    const lock = await this.acquire(resource, ttlMs);
    if (!lock) return null;
    // Redlock v5 hands out a lock even when winning the quorum took longer than its validity.
    if (this.closed || lock.expiration <= Date.now()) {
      await releaseQuietly(lock, ttlMs);
      return null;
    }
    const held = new RedlockHeldLock(resource, lock, ttlMs, this.logger, () =>
      this.held.delete(held),
    );
    this.held.add(held);
    return held;
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.held].map((lock) => lock.release()));
  }

  /** The lock, or null when a quorum refused it or did not answer within the ttl. */
  private async acquire(resource: string, ttlMs: number): Promise<Lock | null> {
    const attempt = this.redlock.acquire([resource], ttlMs);
    try {
      const lock = await settleWithin(attempt, ttlMs);
      if (lock) return lock;
      this.logger?.warn({ resource, ttlMs }, 'pool lock: the quorum did not answer within the ttl');
      // Should the attempt still win, give the lock back rather than block the pool for a ttl.
      attempt.then((late) => releaseQuietly(late, ttlMs), ignore);
      return null;
    } catch (error) {
      if (!(error instanceof ExecutionError)) throw error;
      this.reportFailures(resource, error);
      return null;
    }
  }

  /** Logs votes against that were failures rather than the lock being held elsewhere. */
  private reportFailures(resource: string, error: ExecutionError): void {
    const logger = this.logger;
    if (!logger) return;
    // Each attempt's stats settle once every server voted; a silent one may delay the log line.
    void Promise.all(error.attempts).then((attempts) => {
      const failures = attempts
        .flatMap((stats) => [...stats.votesAgainst.values()])
        .filter((vote) => !(vote instanceof ResourceLockedError));
      if (failures.length === 0) return;
      logger.warn(
        { resource, err: failures[0], failures: failures.length },
        'pool lock: servers failed while acquiring',
      );
    }, ignore);
  }
}
