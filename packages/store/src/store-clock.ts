import type { Clock } from '@bubble/protocol';

export interface ClockSample {
  /** This host's wall clock minus the store's, ms: positive when this host runs ahead. */
  offsetMs: number;
  /** The read's round trip, ms: the sample is off by at most half of it. */
  roundTripMs: number;
}

export interface StoreClockOptions {
  /** Reads the store's clock, ms (Redis: TIME). */
  read: () => Promise<number>;
  /** Between samples; default 5 s. */
  sampleEveryMs?: number;
}

export interface ClockListeners {
  /** Told of every sample taken. */
  onSample?: (sample: ClockSample) => void;
  /** Told of a sample that failed; the clock runs on from the last one. */
  onError?: (err: unknown) => void;
}

/** A round trip this much slower than the best recent one says too little to move the clock. */
const SLOW_FACTOR = 3;
const SLOW_FLOOR_MS = 10;
const RECENT_SAMPLES = 12;
/**
 * The longest the clock stands still for a sample behind it. A store whose clock stepped back
 * further (a failover to a server with another clock) is followed at once: standing still for
 * longer would stop every sweep's time.
 */
const MAX_HOLD_MS = 1_000;

/**
 * The store's clock, kept in this process, so that the times roles compute themselves (a
 * sweep's now, a read's cursor, a post's lookback) agree across hosts whose clocks do not. It
 * is sampled at start and every few seconds; a sample is taken at the middle of its round trip
 * and runs on this process's monotonic clock until the next, so a host clock that steps or
 * drifts moves nothing. It never goes back by less than MAX_HOLD_MS: a sample that far behind
 * the time already given holds the clock still until it catches up. Before the first sample it
 * is this host's wall clock.
 */
export class StoreClock implements Clock {
  private readonly options: StoreClockOptions;
  /** The store's time at `at` (performance.now()) of the last sample kept. */
  private base: number | undefined;
  private at = 0;
  private given = -Infinity;
  private readonly roundTrips: number[] = [];
  private timer: NodeJS.Timeout | undefined;
  private latest: ClockSample | undefined;
  private listeners: ClockListeners = {};

  constructor(options: StoreClockOptions) {
    this.options = options;
  }

  now(): number {
    const raw =
      this.base === undefined ? Date.now() : Math.floor(this.base + (performance.now() - this.at));
    if (raw > this.given || raw < this.given - MAX_HOLD_MS) this.given = raw;
    return this.given;
  }

  /** The last sample taken, undefined before the first. */
  get lastSample(): ClockSample | undefined {
    return this.latest;
  }

  /** Takes one sample now. */
  async sync(): Promise<ClockSample> {
    const sent = performance.now();
    const storeTime = await this.options.read();
    const received = performance.now();
    const roundTripMs = received - sent;
    const best = Math.min(...this.roundTrips);
    this.roundTrips.push(roundTripMs);
    if (this.roundTrips.length > RECENT_SAMPLES) this.roundTrips.shift();
    const slow = roundTripMs > Math.max(SLOW_FLOOR_MS, SLOW_FACTOR * best);
    if (this.base === undefined || !slow) {
      // TIME's milliseconds are truncated: half a millisecond is the better guess.
      this.base = storeTime + 0.5;
      this.at = (sent + received) / 2;
    }
    const sample = {
      offsetMs: Math.round(Date.now() - (this.base + (performance.now() - this.at))),
      roundTripMs: Math.round(roundTripMs * 100) / 100,
    };
    this.latest = sample;
    this.listeners.onSample?.(sample);
    return sample;
  }

  /** The first sample, then one every `sampleEveryMs` until stop(). */
  async start(listeners: ClockListeners = {}): Promise<void> {
    this.listeners = listeners;
    await this.sync();
    if (this.timer) return;
    this.timer = setInterval(() => {
      this.sync().catch((err: unknown) => this.listeners.onError?.(err));
    }, this.options.sampleEveryMs ?? 5_000);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }
}
