/**
 * A/B of bench mass-offline: 50k of 100k held users let go at once (and 5k), with the
 * FeedCounter of a git revision against the working tree's, alternated in one process on the
 * same workload, so that a machine shared with other work slows both alike.
 *
 *   node --expose-gc --import tsx packages/bench/scripts/mass-offline-ab.ts <rev> [pairs=1]
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { FeedCounter } from '../../core/src/feed-counter.js';
import {
  MASS_OFFLINE_DEFAULTS,
  MASS_OFFLINE_NOW,
  measureMassOffline,
  type CounterClass,
} from '../src/mass-offline.js';
import { buildScenarioWorkload } from '../src/workload.js';

const [rev = 'HEAD', pairsArg = '1'] = process.argv.slice(2);

async function oldCounterClass(): Promise<CounterClass> {
  // Inside the repository, so that the old sources' workspace imports (@bubble/…) resolve.
  mkdirSync(join('node_modules', '.cache'), { recursive: true });
  const dir = mkdtempSync(join('node_modules', '.cache', 'mass-offline-ab-'));
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
function collect(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

const log = (line: string) => process.stderr.write(`${line}\n`);
const options = { ...MASS_OFFLINE_DEFAULTS, rounds: 1, log };
const workload = buildScenarioWorkload('mass-offline-ab', options, { now: MASS_OFFLINE_NOW });
const Old = await oldCounterClass();
const pairs: Record<string, number>[] = [];
for (let pair = 0; pair < Number(pairsArg); pair++) {
  const row: Record<string, number> = {};
  for (const withTopics of [false, true]) {
    const suffix = withTopics ? '_topics' : '';
    collect();
    const old = measureMassOffline(workload, options, withTopics, Old);
    collect();
    const now = measureMassOffline(workload, options, withTopics, FeedCounter);
    row[`oldMs_50k${suffix}`] = old.bigMs;
    row[`newMs_50k${suffix}`] = now.bigMs;
    row[`oldMs_5k${suffix}`] = old.smallMs;
    row[`newMs_5k${suffix}`] = now.smallMs;
    row[`speedup_50k${suffix}`] = Math.round((old.bigMs / now.bigMs) * 10) / 10;
  }
  log(JSON.stringify(row));
  pairs.push(row);
}
console.log(JSON.stringify({ scenario: 'mass-offline-ab', rev, pairs }));
