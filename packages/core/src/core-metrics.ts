import { Counter, Gauge, Histogram, Registry } from 'prom-client';

/** What a bubble-core exposes on /metrics, on the registry of its process. */
export class CoreMetrics {
  readonly sweepSeconds: Histogram;
  readonly sweepsSkipped: Counter;
  readonly badgesWritten: Counter;
  readonly staleWritesRejected: Counter;
  readonly driftRepaired: Counter;
  readonly usersHeld: Gauge;
  readonly poolsOwned: Gauge;
  readonly sourcesWaiting: Gauge;

  constructor(registry: Registry) {
    const registers = [registry];
    this.sweepSeconds = new Histogram({
      name: 'bubble_core_sweep_seconds',
      help: 'Duration of one sweep of the pools this core owns',
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    });
    this.sweepsSkipped = new Counter({
      name: 'bubble_core_sweeps_skipped_total',
      help: 'Ticks dropped: a sweep was running and another was already due right after it',
      registers,
    });
    this.badgesWritten = new Counter({
      name: 'bubble_core_badges_written_total',
      help: 'Changed badges written back (and published)',
      registers,
    });
    this.staleWritesRejected = new Counter({
      name: 'bubble_core_stale_writes_rejected_total',
      help: 'Badge writes refused because this core no longer held the pool (old fencing token)',
      registers,
    });
    this.driftRepaired = new Counter({
      name: 'bubble_core_drift_repaired_total',
      help: 'Badges the reconciliation found wrong and repaired from the stored sources',
      registers,
    });
    this.usersHeld = new Gauge({
      name: 'bubble_core_users_held',
      help: 'Online users this core holds in memory',
      registers,
    });
    this.sourcesWaiting = new Gauge({
      name: 'bubble_core_sources_waiting',
      help: "Held users whose sources the store does not hold, waiting for the platform's endpoint (their feed counts 0)",
      registers,
    });
    this.poolsOwned = new Gauge({
      name: 'bubble_core_pools_owned',
      help: 'Pools this core holds a lease on',
      registers,
    });
  }
}
