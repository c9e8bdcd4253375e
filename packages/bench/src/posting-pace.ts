import { sleep } from './live-stack.js';

export interface PostingPaceOptions {
  postsPerSec: number;
  callsPerSec: number;
  warmupSeconds: number;
  seconds: number;
}

/**
 * The clock of a paced posting run: a call every 1/callsPerSec s carrying the posts owed by then
 * at postsPerSec (at most one second's worth), `warmupSeconds` of warm-up, then `seconds` measured.
 */
export class PostingPace {
  readonly started = performance.now();
  readonly measureFrom: number;
  private readonly measureTo: number;
  private readonly period: number;
  /** Posts owed so far. */
  sent = 0;

  constructor(private readonly options: PostingPaceOptions) {
    this.measureFrom = this.started + options.warmupSeconds * 1000;
    this.measureTo = this.measureFrom + options.seconds * 1000;
    this.period = 1000 / options.callsPerSec;
  }

  /** Whether the measured seconds are still running. */
  running(): boolean {
    return performance.now() < this.measureTo;
  }

  /** Posts a call made at `callAt` carries (0: none), counted into `sent`. */
  owed(callAt: number): number {
    const due = Math.floor(((callAt - this.started) / 1000) * this.options.postsPerSec);
    const n = Math.min(Math.max(0, due - this.sent), this.options.postsPerSec);
    this.sent += n;
    return n;
  }

  /** Waits until the call after the one made at `callAt` is due. */
  untilNextCall(callAt: number): Promise<void> {
    return sleep(Math.max(0, callAt + this.period - performance.now()));
  }
}
