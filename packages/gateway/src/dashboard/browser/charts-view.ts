import type { CoreFigures, GatewayFigures, HistorySample, LocalFigures } from '../history-wire.js';
import { byId } from './dom.js';
import { compact, fmt, ms, msTick } from './format.js';
import { WINDOW_MS } from './history-store.js';
import { drawLineChart, type ChartSpec, type Series } from './line-chart.js';

const perSecond = (v: number) => `${v < 10 ? v.toFixed(1) : compact(v)}/s`;
const count = (v: number) => fmt(Math.round(v));

function series(
  samples: HistorySample[],
  name: string,
  read: (s: HistorySample) => number | null | undefined,
): Series {
  return { name, points: samples.map((s) => [s.at, read(s) ?? null]) };
}

/** One series per node id found under `pick` in any sample, ids in order. */
function perNode<T>(
  samples: HistorySample[],
  pick: (s: HistorySample) => Record<string, T>,
  read: (figures: T) => number | null,
): Series[] {
  const ids = new Set<string>();
  for (const s of samples) for (const id of Object.keys(pick(s))) ids.add(id);
  return [...ids].sort().map((id) =>
    series(samples, id, (s) => {
      const figures = pick(s)[id];
      return figures === undefined ? null : read(figures);
    }),
  );
}

/** A figure of each gateway that puts it in its heartbeats; else of the one serving this page. */
function gatewayChart(
  samples: HistorySample[],
  what: string,
  figure: keyof GatewayFigures & keyof LocalFigures,
  rest: Pick<ChartSpec, 'format' | 'empty'>,
): ChartSpec {
  const cluster = perNode(
    samples,
    (s) => s.gateways,
    (g) => g[figure],
  );
  if (cluster.length > 0) return { title: `${what}, per gateway`, ...rest, series: cluster };
  const local = series(samples, 'this gateway', (s) => s.local[figure]);
  return { title: `${what}, this gateway`, ...rest, series: [local] };
}

export function chartSpecs(
  samples: HistorySample[],
  intervalMs: number,
): Record<string, ChartSpec> {
  const every = `${intervalMs / 1000} s`;
  const waiting = `collecting: a sample every ${every}`;
  const perCore = (read: (core: CoreFigures) => number | null) =>
    perNode(samples, (s) => s.cores, read);
  return {
    'chart-sweep': {
      title: 'Sweep duration, all cores',
      format: ms,
      tick: msTick,
      empty: 'no sweep reported yet',
      series: [
        series(samples, 'p99', (s) => s.sweepP99Ms),
        series(samples, 'p50', (s) => s.sweepP50Ms),
      ],
    },
    'chart-changed': {
      title: 'Changed badges / s, all cores',
      format: perSecond,
      empty: waiting,
      series: [series(samples, 'all cores', (s) => s.changedPerSecond)],
    },
    'chart-pushes': gatewayChart(samples, 'Pushes to sockets / s', 'pushesPerSecond', {
      format: perSecond,
      empty: waiting,
    }),
    'chart-connections': gatewayChart(samples, 'WebSocket connections', 'connections', {
      format: count,
      empty: waiting,
    }),
    'chart-online': {
      title: 'Online users',
      format: count,
      empty: waiting,
      series: [series(samples, 'held by the cores', (s) => s.online)],
    },
    'chart-drift': {
      title: `Drift repaired (per ${every})`,
      format: count,
      empty: waiting,
      series: [series(samples, 'all cores', (s) => s.driftRepaired)],
    },
    'chart-stale': {
      title: `Stale writes refused (per ${every})`,
      format: count,
      empty: waiting,
      series: [series(samples, 'all cores', (s) => s.staleWritesRefused)],
    },
    'chart-core-sweep': {
      title: 'Longest sweep, per core',
      format: ms,
      tick: msTick,
      empty: 'no core has reported',
      series: perCore((c) => c.sweepMs),
    },
    'chart-core-changed': {
      title: 'Changed badges / s, per core',
      format: perSecond,
      empty: 'no core has reported',
      series: perCore((c) => c.changedPerSecond),
    },
  };
}

/** Draws every chart of the page from the samples (the 15 minutes up to the newest). */
export function renderCharts(samples: HistorySample[], intervalMs: number): void {
  const to = samples.at(-1)?.at ?? Date.now();
  const window = { from: to - WINDOW_MS, to, maxGapMs: intervalMs * 2.5 };
  for (const [id, spec] of Object.entries(chartSpecs(samples, intervalMs))) {
    drawLineChart(byId(id), spec, window);
  }
  byId('charts-note').textContent =
    samples.length === 0
      ? `No sample yet: this gateway takes one every ${intervalMs / 1000} s and keeps 15 minutes.`
      : `${samples.length} samples, one every ${intervalMs / 1000} s, kept by this gateway.`;
}
