/**
 * What the A/B scripts (compute-ab.ts, mass-offline-ab.ts) share: the FeedCounter of a git
 * revision, loaded beside the working tree's, and a collection between the two.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/** The FeedCounter class of `rev`: its files taken out of git into a temporary folder. */
export async function feedCounterAt<CounterClass>(
  rev: string,
  label: string,
): Promise<CounterClass> {
  const dir = mkdtempSync(join(tmpdir(), `${label}-`));
  for (const file of ['feed-counter.ts', 'intern-table.ts', 'time-heap.ts']) {
    const text = execFileSync('git', ['show', `${rev}:packages/core/src/${file}`], {
      encoding: 'utf8',
    });
    writeFileSync(join(dir, file), text);
  }
  const module = (await import(pathToFileURL(join(dir, 'feed-counter.ts')).href)) as {
    FeedCounter: CounterClass;
  };
  return module.FeedCounter;
}

/** Collects the previous counter's heap first (run with node --expose-gc) so it slows neither. */
export function collectGarbage(): void {
  (globalThis as { gc?: () => void }).gc?.();
}
