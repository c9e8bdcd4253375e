import type { NodeInfo, SweepReport } from '@bubble/protocol';
import type { Registry } from 'prom-client';
import type { CoreFigures, GatewayFigures, HistorySample, LocalFigures } from './history-wire.js';
import { liveFiguresOf } from './live-figures.js';
import { RingBuffer } from './ring-buffer.js';

/** The cluster's coordination data the history reads: every core's sweep report, the live nodes. */
export interface ClusterReads {
  sweepReports(): Promise<SweepReport[]>;
  liveNodes(): Promise<NodeInfo[]>;
}

export interface HistorySources {
  cluster: ClusterReads;
  /** This process's metrics (connections, pushes, posts of the gateway serving the page). */
  registry: Registry;
  now?: () => number;
}

export interface HistoryOptions {
  /** One sample per interval (5 s). */
  intervalMs?: number;
  /** Samples kept (180: 15 minutes of 5 s samples). */
  capacity?: number;
  /**
   * How often the cores' latest sweep reports are read (500 ms). Each core keeps only its latest
   * report, so a sweep that is replaced before this reads it is missed: keep it under the tick.
   */
  sweepPollMs?: number;
}

interface SweepAccumulator {
  durations: number[];
  changed: number;
  staleWritesRefused: number;
  driftRepaired: number;
  cores: Map<string, { sweepMs: number; changed: number }>;
}

const emptyAccumulator = (): SweepAccumulator => ({
  durations: [],
  changed: 0,
  staleWritesRefused: 0,
  driftRepaired: 0,
  cores: new Map(),
});

/**
 * The dashboard's memory: a bounded rolling history of the cluster, sampled by the process that
 * serves the page, so a page opened now shows the last 15 minutes. Cluster-wide figures come from
 * the store (every core's sweep reports, every gateway's heartbeat); the serving
 * process adds its own from its metrics registry. A fixed ring: nothing grows.
 */
export class ClusterHistory {
  readonly intervalMs: number;
  readonly capacity: number;
  private readonly sweepPollMs: number;
  private readonly ring: RingBuffer<HistorySample>;
  private readonly now: () => number;
  private readonly lastSweepAt = new Map<string, number>();
  /** Each core's latest report, as of the last poll. */
  private latestReports: SweepReport[] = [];
  private readonly lastHeartbeat = new Map<
    string,
    { seenAt: number; pushed: number; rate: number | null }
  >();
  private lastLocal: { at: number; pushed: number | null; posts: number | null } | null = null;
  private pending = emptyAccumulator();
  private intervalStart = 0;
  private startedAt = 0;
  private timers: NodeJS.Timeout[] = [];
  private pollingSweeps = false;
  private sampling = false;

  constructor(
    private readonly sources: HistorySources,
    options: HistoryOptions = {},
  ) {
    this.intervalMs = positiveInteger('intervalMs', options.intervalMs ?? 5000);
    this.capacity = positiveInteger('capacity', options.capacity ?? 180);
    this.sweepPollMs = positiveInteger('sweepPollMs', options.sweepPollMs ?? 500);
    this.ring = new RingBuffer(this.capacity);
    this.now = sources.now ?? Date.now;
  }

  start(): void {
    if (this.timers.length > 0) return;
    this.startedAt = this.now();
    this.intervalStart = this.startedAt;
    const poll = setInterval(() => void this.pollSweeps(), this.sweepPollMs);
    const sample = setInterval(() => void this.sample(), this.intervalMs);
    poll.unref();
    sample.unref();
    this.timers = [poll, sample];
    void this.pollSweeps();
  }

  stop(): void {
    for (const timer of this.timers) clearInterval(timer);
    this.timers = [];
  }

  /** Oldest first; with `since`, only the samples taken after it. */
  samples(since?: number): HistorySample[] {
    const all = this.ring.toArray();
    return since === undefined ? all : all.filter((s) => s.at > since);
  }

  /** Reads the cores' latest sweep reports and counts each sweep not seen before. */
  async pollSweeps(): Promise<void> {
    if (this.pollingSweeps) return;
    this.pollingSweeps = true;
    try {
      const reports = await this.sources.cluster.sweepReports();
      this.latestReports = reports;
      for (const report of reports) this.count(report);
      // Bounded by the store's list of reports, which holds one per node.
      const reported = new Set(reports.map((r) => r.node));
      for (const node of this.lastSweepAt.keys())
        if (!reported.has(node)) this.lastSweepAt.delete(node);
    } catch {
      // The store is away: this interval's sample says so (online: null); try again next poll.
    } finally {
      this.pollingSweeps = false;
    }
  }

  private count(report: SweepReport): void {
    const seen = this.lastSweepAt.get(report.node);
    if (seen !== undefined && report.at <= seen) return;
    this.lastSweepAt.set(report.node, report.at);
    // The report already stored when this process started belongs to no interval of ours.
    if (seen === undefined && report.at < this.startedAt) return;
    const acc = this.pending;
    acc.durations.push(report.durationMs);
    acc.changed += report.changed;
    acc.staleWritesRefused += report.staleWritesRejected;
    acc.driftRepaired += report.driftRepaired;
    const core = acc.cores.get(report.node) ?? { sweepMs: 0, changed: 0 };
    core.sweepMs = Math.max(core.sweepMs, report.durationMs);
    core.changed += report.changed;
    acc.cores.set(report.node, core);
  }

  /** Closes the current interval into a sample. */
  async sample(): Promise<HistorySample | undefined> {
    if (this.sampling) return undefined;
    this.sampling = true;
    try {
      await this.pollSweeps();
      const at = this.now();
      const seconds = Math.max((at - this.intervalStart) / 1000, 0.001);
      const acc = this.pending;
      this.pending = emptyAccumulator();
      this.intervalStart = at;

      const [{ gateways, live }, local] = await Promise.all([
        this.readGateways(),
        this.readLocal(at),
      ]);
      // The users the live cores hold: the online users of the owned pools, read from the
      // reports already fetched rather than by counting every pool (thousands of commands).
      const holding = this.latestReports.filter((r) => live?.has(r.node));
      const online = holding.length > 0 ? holding.reduce((sum, r) => sum + r.users, 0) : null;
      const durations = [...acc.durations].sort((a, b) => a - b);
      const cores: Record<string, CoreFigures> = {};
      for (const node of this.lastSweepAt.keys()) {
        const core = acc.cores.get(node);
        // A core that left (its last report stays in the store) is no longer charted.
        if (!core && live && !live.has(node)) continue;
        cores[node] = {
          sweepMs: core ? core.sweepMs : null,
          changedPerSecond: core ? hundredths(core.changed / seconds) : 0,
        };
      }
      const sample: HistorySample = {
        at,
        online,
        sweeps: durations.length,
        sweepP50Ms: quantile(durations, 0.5),
        sweepP99Ms: quantile(durations, 0.99),
        changedPerSecond: hundredths(acc.changed / seconds),
        staleWritesRefused: acc.staleWritesRefused,
        driftRepaired: acc.driftRepaired,
        cores,
        gateways,
        local,
      };
      this.ring.push(sample);
      return sample;
    } finally {
      this.sampling = false;
    }
  }

  /** Every live gateway whose heartbeat carries its figures, and the ids of the live nodes. */
  private async readGateways(): Promise<{
    gateways: Record<string, GatewayFigures>;
    live: Set<string> | null;
  }> {
    const out: Record<string, GatewayFigures> = {};
    let nodes;
    try {
      nodes = await this.sources.cluster.liveNodes();
    } catch {
      return { gateways: out, live: null };
    }
    const live = new Set(nodes.map((n) => n.id));
    for (const id of this.lastHeartbeat.keys()) if (!live.has(id)) this.lastHeartbeat.delete(id);
    for (const node of nodes) {
      const figures = liveFiguresOf(node);
      if (!figures) continue;
      const before = this.lastHeartbeat.get(node.id);
      let rate = before?.rate ?? null;
      if (before && node.seenAt > before.seenAt) {
        const seconds = (node.seenAt - before.seenAt) / 1000;
        rate = hundredths(Math.max(0, figures.pushed - before.pushed) / seconds);
      }
      if (!before || node.seenAt > before.seenAt) {
        this.lastHeartbeat.set(node.id, { seenAt: node.seenAt, pushed: figures.pushed, rate });
      }
      out[node.id] = { connections: figures.connections, pushesPerSecond: rate };
    }
    return { gateways: out, live };
  }

  private async readLocal(at: number): Promise<LocalFigures> {
    const { registry } = this.sources;
    const [connections, pushed, posts, pushBacklog] = await Promise.all([
      metricTotal(registry, 'bubble_ws_connections'),
      metricTotal(registry, 'bubble_gateway_pushes_total'),
      metricTotal(registry, 'bubble_posts_ingested_total'),
      metricTotal(registry, 'bubble_gateway_push_backlog'),
    ]);
    const before = this.lastLocal;
    this.lastLocal = { at, pushed, posts };
    const rate = (now: number | null, then: number | null | undefined) =>
      before && now !== null && then !== null && then !== undefined && at > before.at
        ? hundredths(Math.max(0, now - then) / ((at - before.at) / 1000))
        : null;
    return {
      connections,
      pushesPerSecond: rate(pushed, before?.pushed),
      postsPerSecond: rate(posts, before?.posts),
      pushBacklog,
    };
  }
}

/** Rates to 0.01/s: enough for a chart, and the history's JSON stays small. */
function hundredths(n: number): number {
  return Math.round(n * 100) / 100;
}

/** The nearest-rank quantile of sorted values. */
export function quantile(sorted: readonly number[], q: number): number | null {
  if (sorted.length === 0) return null;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank]!;
}

async function metricTotal(registry: Registry, name: string): Promise<number | null> {
  const metric = registry.getSingleMetric(name);
  if (!metric) return null;
  const { values } = await metric.get();
  return values.reduce((sum, v) => sum + v.value, 0);
}

function positiveInteger(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1) {
    throw new RangeError(`${name} must be a positive integer, got ${value}`);
  }
  return value;
}
