import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';

export interface LoadMonitorOptions {
  /** Poll interval advertised when the process is not under pressure. */
  basePollSeconds: number;
  /** Most concurrent requests in flight before new polls are turned away. */
  maxInFlight: number;
}

/**
 * Pressure from event-loop delay and requests in flight. Pollers are told to slow down as it
 * grows, and are refused (503 + Retry-After) past the overload mark.
 */
export class LoadMonitor {
  private readonly delay: IntervalHistogram;
  private readonly timer: NodeJS.Timeout;
  private lagMs = 0;
  inFlight = 0;

  constructor(readonly options: LoadMonitorOptions) {
    this.delay = monitorEventLoopDelay({ resolution: 20 });
    this.delay.enable();
    this.timer = setInterval(() => {
      this.lagMs = this.delay.percentile(99) / 1e6;
      this.delay.reset();
    }, 1000);
    this.timer.unref();
  }

  /** 0 calm · 1 busy · 2 strained · 3 overloaded. */
  pressure(): number {
    const crowd = this.inFlight / this.options.maxInFlight;
    if (this.lagMs > 1000 || crowd >= 1) return 3;
    if (this.lagMs > 200 || crowd >= 0.75) return 2;
    if (this.lagMs > 50 || crowd >= 0.5) return 1;
    return 0;
  }

  pollIntervalSeconds(): number {
    return this.options.basePollSeconds * 2 ** Math.min(this.pressure(), 2);
  }

  overloaded(): boolean {
    return this.pressure() >= 3;
  }

  close(): void {
    clearInterval(this.timer);
    this.delay.disable();
  }
}
