export interface Sample {
  labels: Record<string, string>;
  value: number;
}

/** Prometheus text format: metric name → its samples. */
export type Samples = Map<string, Sample[]>;

const LINE = /^([A-Za-z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /(\w+)="((?:[^"\\]|\\.)*)"/g;

export function parseMetrics(text: string): Samples {
  const samples: Samples = new Map();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = LINE.exec(line);
    if (!m) continue;
    const [, name, labelText, raw] = m as unknown as [string, string, string | undefined, string];
    const labels: Record<string, string> = {};
    for (const part of (labelText ?? '').matchAll(LABEL)) labels[part[1]!] = part[2]!;
    const value = raw === '+Inf' ? Infinity : Number(raw);
    if (Number.isNaN(value)) continue;
    let list = samples.get(name);
    if (!list) samples.set(name, (list = []));
    list.push({ labels, value });
  }
  return samples;
}

export function total(
  samples: Samples,
  name: string,
  keep?: (labels: Record<string, string>) => boolean,
): number | null {
  let sum = 0;
  let seen = false;
  for (const s of samples.get(name) ?? []) {
    if (keep && !keep(s.labels)) continue;
    sum += s.value;
    seen = true;
  }
  return seen ? sum : null;
}

/** A quantile estimated from a histogram's cumulative buckets (linear within a bucket). */
export function quantile(samples: Samples, name: string, q: number): number | null {
  const buckets = (samples.get(`${name}_bucket`) ?? [])
    .map((s) => ({ le: s.labels.le === '+Inf' ? Infinity : Number(s.labels.le), n: s.value }))
    .sort((a, b) => a.le - b.le);
  const count = buckets.at(-1)?.n ?? 0;
  if (!count) return null;
  const rank = q * count;
  let lowLe = 0;
  let lowN = 0;
  for (const b of buckets) {
    if (b.n >= rank) {
      if (b.le === Infinity) return lowLe;
      return lowLe + ((b.le - lowLe) * (rank - lowN)) / Math.max(b.n - lowN, 1e-9);
    }
    lowLe = b.le;
    lowN = b.n;
  }
  return null;
}
