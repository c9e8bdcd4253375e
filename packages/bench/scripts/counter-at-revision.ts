/**
 * What the A/B scripts (compute-ab.ts, mass-offline-ab.ts) share: the FeedCounter of a git
 * revision, loaded beside the working tree's, and a collection between the two.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

/** The FeedCounter class of `rev`: the revision's whole core/src taken out of git. */
export async function feedCounterAt<CounterClass>(
  rev: string,
  label: string,
): Promise<CounterClass> {
  // Inside the repository, so that the old sources' workspace imports (@bubble/…) resolve.
  mkdirSync(join('node_modules', '.cache'), { recursive: true });
  const dir = mkdtempSync(join('node_modules', '.cache', `${label}-`));
  const paths = execFileSync('git', ['ls-tree', '-r', '--name-only', rev, 'packages/core/src'], {
    encoding: 'utf8',
  });
  for (const path of paths.split('\n').filter(Boolean)) {
    const file = join(dir, relative('packages/core/src', path));
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, execFileSync('git', ['show', `${rev}:${path}`], { encoding: 'utf8' }));
  }
  const module = (await import(pathToFileURL(resolve(dir, 'feed-counter.ts')).href)) as {
    FeedCounter: CounterClass;
  };
  return module.FeedCounter;
}

/** Collects the previous counter's heap first (run with node --expose-gc) so it slows neither. */
export function collectGarbage(): void {
  (globalThis as { gc?: () => void }).gc?.();
}
