/** One author's posts in the lookback window, kept sorted by (ts, id) for O(log n) counting. */
export class SortedPosts {
  private readonly times: number[] = [];
  private readonly ids: string[] = [];
  private readonly tsById = new Map<string, number>();

  get size(): number {
    return this.times.length;
  }

  has(id: string): boolean {
    return this.tsById.has(id);
  }

  tsOf(id: string): number | undefined {
    return this.tsById.get(id);
  }

  /** Adds unless present; returns whether it was added. */
  add(id: string, ts: number): boolean {
    if (this.tsById.has(id)) return false;
    const at = this.position(ts, id);
    this.times.splice(at, 0, ts);
    this.ids.splice(at, 0, id);
    this.tsById.set(id, ts);
    return true;
  }

  remove(id: string): boolean {
    const ts = this.tsById.get(id);
    if (ts === undefined) return false;
    const at = this.position(ts, id);
    this.times.splice(at, 1);
    this.ids.splice(at, 1);
    this.tsById.delete(id);
    return true;
  }

  /** Drops every post with ts ≤ minTs; returns their ids. */
  trimThrough(minTs: number): string[] {
    const cut = upperBound(this.times, minTs);
    if (cut === 0) return [];
    const dropped = this.ids.splice(0, cut);
    for (const id of dropped) this.tsById.delete(id);
    this.times.splice(0, cut);
    return dropped;
  }

  /** Posts with afterTs < ts ≤ untilTs. */
  countBetween(afterTs: number, untilTs: number): number {
    if (untilTs <= afterTs) return 0;
    return upperBound(this.times, untilTs) - upperBound(this.times, afterTs);
  }

  /** Posts with ts > afterTs, oldest first. */
  after(afterTs: number): { id: string; ts: number }[] {
    const out: { id: string; ts: number }[] = [];
    for (let i = upperBound(this.times, afterTs); i < this.times.length; i++) {
      out.push({ id: this.ids[i]!, ts: this.times[i]! });
    }
    return out;
  }

  private position(ts: number, id: string): number {
    let lo = 0;
    let hi = this.times.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const midTs = this.times[mid]!;
      if (midTs < ts || (midTs === ts && this.ids[mid]! < id)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}

/** First index whose value is > x. */
function upperBound(sorted: readonly number[], x: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
