import { readIngestBacklog, type IngestPartitionBacklog } from '@bubble/store';
import { Registry } from 'prom-client';
import { IngestMetrics } from './metrics.js';
import type { IngestConsumerOptions } from './consumer-options.js';
import { PartitionLoop } from './partition-loop.js';

/**
 * Consumes `<prefix>:ingest:{0..P-1}` with the group `bubble` (docs/api.md): one loop per
 * partition, applying entries through the platform op table and acknowledging them after their
 * effect is stored. Each loop has two connections of its own: one blocks in XREADGROUP, the
 * other acknowledges, claims and trims, so that a read of the next entries runs while the
 * entries in hand are applied (which keeps their order: a batch applies after the one before).
 */
export class IngestConsumers {
  readonly metrics: IngestMetrics;
  private readonly loops: PartitionLoop[];
  private backlogTimer: NodeJS.Timeout | undefined;
  private latestBacklog: IngestPartitionBacklog[] = [];
  private running: Promise<void>[] = [];

  constructor(private readonly options: IngestConsumerOptions) {
    this.metrics = new IngestMetrics(options.registry ?? new Registry());
    this.loops = Array.from(
      { length: options.partitions },
      (_, partition) => new PartitionLoop(options, partition, this.metrics),
    );
  }

  start(): void {
    if (this.running.length > 0) return;
    this.running = this.loops.map((loop) => loop.run());
    const every = this.options.backlogEveryMs ?? 2_000;
    this.backlogTimer = setInterval(() => void this.refreshBacklog(), every);
    this.backlogTimer.unref();
    void this.refreshBacklog();
  }

  /** Stops reading; the batch in hand finishes (or stays pending when the store is down). */
  async close(): Promise<void> {
    clearInterval(this.backlogTimer);
    for (const loop of this.loops) loop.stop();
    await Promise.all(this.running);
    this.running = [];
  }

  /** The last backlog read (every backlogEveryMs). */
  get backlog(): readonly IngestPartitionBacklog[] {
    return this.latestBacklog;
  }

  /** Reads since start that were abandoned by the watchdog, summed over partitions. */
  get readStalls(): number {
    return this.loops.reduce((sum, loop) => sum + loop.stalls, 0);
  }

  private async refreshBacklog(): Promise<void> {
    try {
      const { redis, keys, partitions } = this.options;
      this.latestBacklog = await readIngestBacklog(redis, keys, partitions);
      for (const one of this.latestBacklog) {
        const partition = String(one.partition);
        this.metrics.lag.set({ partition }, one.lag);
        this.metrics.pending.set({ partition }, one.pending);
        this.metrics.oldestPendingSeconds.set({ partition }, one.oldestPendingMs / 1000);
        this.metrics.deadLetters.set({ partition }, one.deadLetters);
      }
    } catch {
      // The gauges keep their last values; the loops report the store's failures.
    }
  }
}
