import type { HistoryResponse, HistorySample } from '../history-wire.js';

export const WINDOW_MS = 15 * 60_000;

/** The samples of the last 15 minutes the page holds, merged from incremental reads. */
export class HistoryStore {
  samples: HistorySample[] = [];
  intervalMs = 5000;

  /** The time of the newest sample, to ask only for newer ones; null before the first read. */
  get since(): number | null {
    return this.samples.at(-1)?.at ?? null;
  }

  merge(response: HistoryResponse): void {
    this.intervalMs = response.intervalMs;
    const since = this.since ?? -Infinity;
    for (const sample of response.samples) if (sample.at > since) this.samples.push(sample);
    const newest = this.since;
    if (newest !== null) this.samples = this.samples.filter((s) => s.at > newest - WINDOW_MS);
  }

  clear(): void {
    this.samples = [];
  }
}
