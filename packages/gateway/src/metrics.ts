import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { trackSchedulerGauges, type SchedulerGaugeSource } from './process-gauges.js';

/** One registry per process role, so several roles can live in one process (`bubble all`). */
export class GatewayMetrics {
  readonly registry = new Registry();
  readonly httpRequests = new Counter({
    name: 'bubble_http_requests_total',
    help: 'HTTP requests answered, by route pattern, method and status',
    labelNames: ['route', 'method', 'status'] as const,
    registers: [this.registry],
  });
  readonly httpDuration = new Histogram({
    name: 'bubble_http_request_duration_seconds',
    help: 'Time to answer an HTTP request, by route pattern',
    labelNames: ['route'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  });
  readonly rateLimited = new Counter({
    name: 'bubble_http_rate_limited_total',
    help: 'Client-route requests refused with 429 before any store access, by the limit that refused them (user, address)',
    labelNames: ['limit'] as const,
    registers: [this.registry],
  });
  readonly coldStarts = new Histogram({
    name: 'bubble_cold_start_seconds',
    help: 'Time to compute one badge on demand from the stored sources',
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1],
    registers: [this.registry],
  });
  readonly pushWait = new Histogram({
    name: 'bubble_gateway_push_wait_seconds',
    help: 'Per push: time since the oldest routed change it stands for arrived (conflated changes wait together)',
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });
  readonly resyncs = new Counter({
    name: 'bubble_gateway_resyncs_total',
    help: "Re-reads of held users' badges after pub/sub messages to this gateway may have been lost, by what found it: the subscriber reconnected, a message number skipped (gap), a periodic check",
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  readonly resyncRepairs = new Counter({
    name: 'bubble_gateway_resync_repairs_total',
    help: 'Held users whose cached badge a re-read after lost pub/sub messages replaced: badges that were stale',
    registers: [this.registry],
  });
  readonly watchListReads = new Counter({
    name: 'bubble_watch_list_reads_total',
    help: 'Conversation lists read again for connections that sent watch (a list signal, moved counts, a read, the safety refresh)',
    registers: [this.registry],
  });
  readonly postsIngested = new Counter({
    name: 'bubble_posts_ingested_total',
    help: 'Posts received by POST /v1/posts, by outcome',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly counterEventsIngested = new Counter({
    name: 'bubble_counter_events_ingested_total',
    help: 'Interaction events received by POST /v1/counters, by outcome (ignored: a repeated or retracted id)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  constructor(options: { defaultMetrics?: boolean } = {}) {
    if (options.defaultMetrics ?? true)
      collectDefaultMetrics({ register: this.registry, prefix: 'bubble_' });
  }

  /** A bubble-server of this process: `bubble_server_leading` and `bubble_pools_unowned`. */
  readonly clockOffset = new Gauge({
    name: 'bubble_clock_offset_seconds',
    help: "This host's clock minus the store's (Redis TIME) at the last sample; times are taken from the store's",
    registers: [this.registry],
  });

  trackScheduler(scheduler: SchedulerGaugeSource): void {
    trackSchedulerGauges(this.registry, scheduler);
  }
}
