import { Counter, Gauge, type Registry } from 'prom-client';

/** The ingest stream's metrics (docs/operations.md); one set per registry. */
export class IngestMetrics {
  readonly lag: Gauge<'partition'>;
  readonly pending: Gauge<'partition'>;
  readonly oldestPendingSeconds: Gauge<'partition'>;
  readonly deadLetters: Gauge<'partition'>;
  readonly entries: Counter<'op' | 'outcome'>;
  readonly claimed: Counter;
  readonly readStalls: Counter;
  readonly groupCreated: Counter;

  constructor(registry: Registry) {
    const gauge = (name: string, help: string): Gauge<'partition'> =>
      (registry.getSingleMetric(name) as Gauge<'partition'> | undefined) ??
      new Gauge({ name, help, labelNames: ['partition'], registers: [registry] });
    const counter = <Label extends string>(
      name: string,
      help: string,
      labelNames: Label[] = [],
    ): Counter<Label> =>
      (registry.getSingleMetric(name) as Counter<Label> | undefined) ??
      new Counter({ name, help, labelNames, registers: [registry] });
    this.lag = gauge('bubble_ingest_lag', 'ingest entries not yet delivered to a consumer');
    this.pending = gauge('bubble_ingest_pending', 'ingest entries delivered, not acknowledged');
    this.oldestPendingSeconds = gauge(
      'bubble_ingest_oldest_pending_seconds',
      "the oldest pending ingest entry's age on the store's clock",
    );
    this.deadLetters = gauge('bubble_ingest_dead_letters', 'entries in the dead-letter stream');
    this.entries = counter(
      'bubble_ingest_entries_total',
      'ingest entries this process applied or dead-lettered',
      ['op', 'outcome'],
    );
    this.claimed = counter(
      'bubble_ingest_claimed_total',
      'ingest entries taken over by XAUTOCLAIM after BUBBLE_INGEST_CLAIM_MS idle',
    );
    this.readStalls = counter(
      'bubble_ingest_read_stalls_total',
      'blocking reads abandoned after block time + 5 s, their connection replaced',
    );
    this.groupCreated = counter(
      'bubble_ingest_group_created_total',
      'consumer groups (re)created, at start or after Redis lost them (NOGROUP)',
    );
  }
}
