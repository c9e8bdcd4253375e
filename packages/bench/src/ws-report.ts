import type { DriverHandle } from './driver-process.js';
import { round2, wallNow } from './live-stack.js';
import type { WsReport } from './ws-driver.js';

/** The driver's clock minus ours, from the exchange with the shortest round trip. */
export async function clockOffset(
  driver: DriverHandle,
): Promise<{ offsetMs: number; rttMs: number }> {
  let best = { offsetMs: 0, rttMs: Infinity };
  for (let i = 0; i < 20; i++) {
    const sent = wallNow();
    const theirs = await driver.call<number>('clock');
    const back = wallNow();
    if (back - sent < best.rttMs)
      best = { offsetMs: theirs - (sent + back) / 2, rttMs: back - sent };
  }
  return best;
}

/** The p-th percentile of a histogram of 0.1 ms buckets holding `samples` samples. */
function histogramPercentile(histogram: Float64Array, samples: number, p: number): number {
  const rank = Math.max(1, Math.ceil((p / 100) * samples));
  let seen = 0;
  for (let i = 0; i < histogram.length; i++) {
    seen += histogram[i]!;
    if (seen >= rank) return round2(i / 10);
  }
  return 0;
}

export function mergeReports(reports: WsReport[]) {
  const histogram = new Float64Array(reports[0]?.histogram.length ?? 1);
  const quietHistogram = new Float64Array(histogram.length);
  let samples = 0;
  let quietSamples = 0;
  for (const r of reports) {
    r.histogram.forEach((count, i) => (histogram[i]! += count));
    r.quietHistogram.forEach((count, i) => (quietHistogram[i]! += count));
    samples += r.samples;
    quietSamples += r.quietSamples;
  }
  const at = (p: number) => histogramPercentile(histogram, samples, p);
  const quietAt = (p: number) => histogramPercentile(quietHistogram, quietSamples, p);
  let max = 0;
  histogram.forEach((count, i) => {
    if (count > 0) max = i;
  });
  const closes: Record<string, number> = {};
  for (const r of reports) {
    for (const [code, n] of Object.entries(r.closes)) closes[code] = (closes[code] ?? 0) + n;
  }
  const sum = (f: (r: WsReport) => number) => reports.reduce((total, r) => total + f(r), 0);
  return {
    samples,
    quietSamples,
    quietP50Ms: quietAt(50),
    quietP99Ms: quietAt(99),
    p50Ms: at(50),
    p90Ms: at(90),
    p99Ms: at(99),
    maxMs: round2(max / 10),
    frames: sum((r) => r.framesMeasured),
    seconds: sum((r) => r.measuredSeconds) / Math.max(1, reports.length),
    undelivered: sum((r) => r.undelivered),
    beforeAnswer: sum((r) => r.beforeAnswer),
    decreases: sum((r) => r.decreases),
    closes,
  };
}
