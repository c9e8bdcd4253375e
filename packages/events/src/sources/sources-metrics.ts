import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

export type SourcesRequestLabel = 'ok' | 'error' | 'timeout' | 'invalid';
/** ok: installed from an answer; invalid: their entry refused; failed: no answer; paused: the breaker. */
export type SourcesUserLabel = 'ok' | 'invalid' | 'failed' | 'paused';

/** The client's figures as plain numbers (the metrics' values, for /v1/cluster or tests). */
export interface SourcesClientStats {
  requests: Record<SourcesRequestLabel, number>;
  users: Record<SourcesUserLabel, number>;
  /** Users with a fetch pending that is not in a request: queued for one, or between retries. */
  usersWaiting: number;
  /** Users in a request now. */
  usersInFlight: number;
  requestsInFlight: number;
  /** 1 from the breaker's opening until a probe succeeds. */
  breakerOpen: 0 | 1;
}

export interface SourcesGaugeValues {
  usersWaiting: number;
  breakerOpen: 0 | 1;
}

/** The metrics of the sources client (docs/operations.md), on the process's registry. */
export class SourcesMetrics {
  readonly requestCounts: Record<SourcesRequestLabel, number> = {
    ok: 0,
    error: 0,
    timeout: 0,
    invalid: 0,
  };
  readonly userCounts: Record<SourcesUserLabel, number> = {
    ok: 0,
    invalid: 0,
    failed: 0,
    paused: 0,
  };
  private readonly requests: Counter<'result'>;
  private readonly requestSeconds: Histogram;
  private readonly users: Counter<'result'>;

  constructor(registry: Registry, gauges: () => SourcesGaugeValues) {
    const registers = [registry];
    this.requests = new Counter({
      name: 'bubble_sources_requests_total',
      help: 'requests to the sources endpoint: ok (200 and the shape), error (a status or the network), timeout, invalid (200, not the shape)',
      labelNames: ['result'],
      registers,
    });
    this.requestSeconds = new Histogram({
      name: 'bubble_sources_request_seconds',
      help: 'time from sending a request to the sources endpoint to its whole answer (or failure)',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.users = new Counter({
      name: 'bubble_sources_users_fetched_total',
      help: 'users whose fetch ended: ok, invalid (their entry refused), failed (no answer), paused (breaker open, no request)',
      labelNames: ['result'],
      registers,
    });
    new Gauge({
      name: 'bubble_sources_users_waiting',
      help: 'users whose fetch waits for a request: queued behind the concurrency bound, or between retries',
      registers,
      collect() {
        this.set(gauges().usersWaiting);
      },
    });
    new Gauge({
      name: 'bubble_sources_breaker_open',
      help: '1 while the circuit breaker pauses the sources endpoint (until a probe succeeds)',
      registers,
      collect() {
        this.set(gauges().breakerOpen);
      },
    });
  }

  request(result: SourcesRequestLabel, seconds: number): void {
    this.requestCounts[result]++;
    this.requests.inc({ result });
    this.requestSeconds.observe(seconds);
  }

  usersEnded(result: SourcesUserLabel, count = 1): void {
    if (count === 0) return;
    this.userCounts[result] += count;
    this.users.inc({ result }, count);
  }
}
