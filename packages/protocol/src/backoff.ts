/** Exponential backoff with full jitter: uniform in [0, min(max, base · 2^(attempt − 1))). */
export function backoffMs(attempt: number, baseMs: number, maxMs: number, random = Math.random) {
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.min(attempt - 1, 40));
  return Math.floor(random() * ceiling);
}
