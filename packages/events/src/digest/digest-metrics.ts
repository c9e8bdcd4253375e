import { Counter, Gauge, type Registry } from 'prom-client';

/** The feed digest's metrics (docs/operations.md), on the process's registry. */
export class DigestMetrics {
  readonly users: Counter<'outcome'>;

  constructor(registry: Registry, lagMs: () => number) {
    const registers = [registry];
    this.users = new Counter({
      name: 'bubble_digest_users_total',
      help: 'users the feed digest looked at, by outcome: online, skipped (nothing they follow had a post stored or deleted since their badge was counted), changed (made due with reason feed)',
      labelNames: ['outcome'],
      registers,
    });
    new Gauge({
      name: 'bubble_digest_lag_seconds',
      help: 'how far the shared digest pass was behind its schedule at this process last claim: the oldest user not yet looked at is past their interval by this much',
      registers,
      collect() {
        this.set(lagMs() / 1000);
      },
    });
  }
}
