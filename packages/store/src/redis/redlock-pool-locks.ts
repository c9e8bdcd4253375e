// Brings redlock's ambient types into every program compiling this file, not only the store's
// own project (e.g. test/tsconfig.json); a global declaration file cannot be imported.
// eslint-disable-next-line @typescript-eslint/triple-slash-reference
/// <reference path="../redlock.d.ts" />
import type { Redis } from 'ioredis';
import Redlock, { ExecutionError, ResourceLockedError, type Lock } from 'redlock';
import type { HeldLock, PoolLocks } from '../cluster-types.js';
import type { RedisKeys } from './keys.js';

/** The part of a pino logger this class uses. */
export interface PoolLocksLogger {
  warn(obj: object, msg: string): void;
}

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

class RedlockHeldLock implements HeldLock {
  private readonly controller = new AbortController();
  readonly signal = this.controller.signal;
  private extendTimer: NodeJS.Timeout | undefined;
  private expiryTimer: NodeJS.Timeout | undefined;
  private ending: Promise<void> | undefined;

  constructor(
    readonly resource: string,
    private lock: Lock,
    private readonly ttlMs: number,
    private readonly logger: PoolLocksLogger | undefined,
    private readonly onEnd: () => void,
  ) {
    this.arm();
  }

  /** Redlock's expiration: when the request was sent + ttl − allowance for drift. */
  validUntil(): number {
    return this.signal.aborted ? 0 : this.lock.expiration;
  }

  release(): Promise<void> {
    return this.end(new Error(`lock ${this.resource} released`));
  }

  private arm(): void {
    this.scheduleExtension(Math.floor(this.ttlMs / 3));
    // An extension that hangs on silent servers must not keep the lock alive past its expiry.
    this.expiryTimer = setTimeout(
      () => this.lose(new Error('expired before an extension succeeded')),
      this.lock.expiration - Date.now(),
    );
    // A forgotten lock must not keep the process running; it then simply expires.
    this.expiryTimer.unref();
  }

  private scheduleExtension(delayMs: number): void {
    this.extendTimer = setTimeout(() => void this.extend(), delayMs);
    this.extendTimer.unref();
  }

  private async extend(): Promise<void> {
    try {
      const extended = await this.lock.extend(this.ttlMs);
      // Released or lost meanwhile: the release queued behind this extension undoes it.
      if (this.signal.aborted) return;
      clearTimeout(this.expiryTimer);
      this.lock = extended;
      this.arm();
    } catch (error) {
      if (this.signal.aborted) return;
      // A server that failed (a failover's MOVED or lost connection) may answer the next try
      // while the lock is still valid; a lock held by someone else is lost now.
      if (await heldElsewhere(error)) {
        this.lose(error);
        return;
      }
      const retryInMs = Math.max(50, Math.floor(this.ttlMs / 10));
      if (Date.now() + retryInMs >= this.lock.expiration) {
        this.lose(error);
        return;
      }
      this.scheduleExtension(retryInMs);
    }
  }

  private lose(cause: unknown): void {
    if (this.signal.aborted) return;
    this.logger?.warn({ resource: this.resource, err: cause }, 'pool lock lost');
    void this.end(new Error(`lock ${this.resource} lost`, { cause }));
  }

  private end(reason: Error): Promise<void> {
    this.ending ??= (async () => {
      clearTimeout(this.extendTimer);
      clearTimeout(this.expiryTimer);
      this.controller.abort(reason);
      this.onEnd();
      await releaseQuietly(this.lock, this.ttlMs);
    })();
    return this.ending;
  }
}

/**
 * Whether a failed extension was refused by a server where the lock is no longer ours (expired,
 * or taken by another holder), rather than failed by servers that did not answer properly.
 */
async function heldElsewhere(error: unknown): Promise<boolean> {
  if (!(error instanceof ExecutionError)) return false;
  const attempts = await Promise.all(error.attempts).catch(() => []);
  if (attempts.length === 0) return true;
  return attempts.some((stats) =>
    [...stats.votesAgainst.values()].some((vote) => vote instanceof ResourceLockedError),
  );
}

/**
 * Deletes the lock where it still holds, best effort: whatever is not deleted expires within
 * the ttl, which is also the longest this waits for servers that do not answer.
 */
async function releaseQuietly(lock: Lock, ttlMs: number): Promise<void> {
  await settleWithin(lock.release(), ttlMs).catch(ignore);
}

/** The promise's value, or undefined when it has not settled within `ms`. */
async function settleWithin<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function ignore(): void {}
