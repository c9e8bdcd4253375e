const SECOND_MS = 1000;
export const MINUTE_MS = 60 * SECOND_MS;
export const HOUR_MS = 60 * MINUTE_MS;
export const DAY_MS = 24 * HOUR_MS;

/** A post may be stamped at most this far ahead of the server's clock. */
export const MAX_FUTURE_SKEW_MS = 60 * SECOND_MS;

/** Where a feed's window starts: posts after max(readAt, now − lookback) count, up to now. */
export function feedWindowStart(readAt: number | null, now: number, lookbackMs: number): number {
  return Math.max(readAt ?? -Infinity, now - lookbackMs);
}

export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock tests move by hand. */
export class ManualClock implements Clock {
  constructor(private current: number) {}
  now(): number {
    return this.current;
  }
  set(ms: number): void {
    this.current = ms;
  }
  advance(ms: number): void {
    this.current += ms;
  }
}

/**
 * `promise`, or a rejection once `ms` have passed without it settling. The timer never keeps
 * the process alive and is cleared as soon as either side settles.
 */
export function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    timer.unref();
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
