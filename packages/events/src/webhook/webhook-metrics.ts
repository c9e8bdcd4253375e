import { Counter, Gauge, type Registry } from 'prom-client';
import type { WebhookQueueStats } from '@bubble/store';

/** The metrics of offline delivery (docs/operations.md), on the process's registry. */
export class WebhookMetrics {
  readonly deliveries: Counter<'outcome'>;
  readonly requests: Counter<'outcome'>;
  readonly retries: Counter;
  readonly deadLettered: Counter<'reason'>;
  readonly shed: Counter;
  readonly coalesced: Counter;
  readonly skippedOnline: Counter;
  readonly skippedUnchanged: Counter;
  readonly expansions: Counter<'kind'>;
  readonly jobsMerged: Counter;

  constructor(registry: Registry, stats: () => Promise<WebhookQueueStats>) {
    const registers = [registry];
    this.deliveries = new Counter({
      name: 'bubble_webhook_deliveries_total',
      help: 'users whose badge was delivered (sent) or given up (dead)',
      labelNames: ['outcome'],
      registers,
    });
    this.requests = new Counter({
      name: 'bubble_webhook_requests_total',
      help: 'webhook requests by outcome: ok (2xx), retry (408, 429, 5xx, timeout, refused), dead',
      labelNames: ['outcome'],
      registers,
    });
    this.retries = new Counter({
      name: 'bubble_webhook_retries_total',
      help: 'attempts of a delivery scheduled after a failed one',
      registers,
    });
    this.deadLettered = new Counter({
      name: 'bubble_webhook_dead_lettered_total',
      help: 'deliveries given up: rejected (a 4xx) or attempts (BUBBLE_WEBHOOK_MAX_ATTEMPTS)',
      labelNames: ['reason'],
      registers,
    });
    this.shed = new Counter({
      name: 'bubble_webhook_shed_total',
      help: 'queued users dropped, oldest first, past BUBBLE_WEBHOOK_QUEUE_MAX',
      registers,
    });
    this.coalesced = new Counter({
      name: 'bubble_webhook_coalesced_total',
      help: 'badge changes of a user already queued, merged into their one delivery',
      registers,
    });
    this.skippedOnline = new Counter({
      name: 'bubble_webhook_skipped_online_total',
      help: 'users left out of a delivery because they were online (and their total did not go down)',
      registers,
    });
    this.skippedUnchanged = new Counter({
      name: 'bubble_webhook_skipped_unchanged_total',
      help: 'due users left out of a delivery because their total is what bubble last delivered',
      registers,
    });
    this.expansions = new Counter({
      name: 'bubble_webhook_expansions_total',
      help: 'jobs whose users were scheduled, by kind of job (a conversation at most once an interval)',
      labelNames: ['kind'],
      registers,
    });
    this.jobsMerged = new Counter({
      name: 'bubble_webhook_jobs_merged_total',
      help: 'conversation jobs merged into their conversation deferred job (expanded once an interval)',
      registers,
    });
    // One read of the queue per scrape, shared by the three gauges.
    let pending: Promise<WebhookQueueStats> | undefined;
    const read = () => {
      pending ??= stats().finally(() => setTimeout(() => (pending = undefined), 100).unref());
      return pending;
    };
    const gauge = (name: string, help: string, value: (s: WebhookQueueStats) => number) =>
      new Gauge({
        name,
        help,
        registers,
        async collect() {
          try {
            this.set(value(await read()));
          } catch {
            // Redis unreachable: the last value stays; /readyz says why.
          }
        },
      });
    gauge('bubble_webhook_queue_users', 'users waiting for a delivery', (s) => s.queued);
    gauge(
      'bubble_webhook_oldest_queued_seconds',
      'how long the longest-waiting queued user has waited',
      (s) => s.oldestQueuedMs / 1000,
    );
    gauge(
      'bubble_webhook_retrying',
      'batches stored and not yet delivered or dead-lettered',
      (s) => s.retrying,
    );
  }
}
