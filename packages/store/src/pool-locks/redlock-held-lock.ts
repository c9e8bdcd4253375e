// eslint-disable-next-line @typescript-eslint/triple-slash-reference
/// <reference path="./redlock.d.ts" />
import { ExecutionError, ResourceLockedError, type Lock } from 'redlock';
import type { HeldLock } from './pool-locks.js';
import type { PoolLocksLogger } from './pool-locks.js';

export class RedlockHeldLock implements HeldLock {
  private readonly controller = new AbortController();
  readonly signal: AbortSignal = this.controller.signal;
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
export async function releaseQuietly(lock: Lock, ttlMs: number): Promise<void> {
  await settleWithin(lock.release(), ttlMs).catch(ignore);
}

/** The promise's value, or undefined when it has not settled within `ms`. */
export async function settleWithin<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
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

export function ignore(): void {}
