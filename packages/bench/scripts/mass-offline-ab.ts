/**
 * A/B of bench mass-offline: 50k of 100k held users let go at once (and 5k), with the
 * FeedCounter of a git revision against the working tree's, alternated in one process on the
 * same workload, so that a machine shared with other work slows both alike.
 *
 *   node --expose-gc --import tsx packages/bench/scripts/mass-offline-ab.ts <rev> [pairs=1]
 */
import { FeedCounter } from '../../core/src/feed-counter.js';
import {
  MASS_OFFLINE_DEFAULTS,
  MASS_OFFLINE_NOW,
  measureMassOffline,
  type CounterClass,
} from '../src/mass-offline.js';
import { buildScenarioWorkload } from '../src/workload.js';
import { collectGarbage, feedCounterAt } from './counter-at-revision.js';

const [rev = 'HEAD', pairsArg = '1'] = process.argv.slice(2);

const log = (line: string) => process.stderr.write(`${line}\n`);
const options = { ...MASS_OFFLINE_DEFAULTS, rounds: 1, log };
const workload = buildScenarioWorkload('mass-offline-ab', options, { now: MASS_OFFLINE_NOW });
const Old = await feedCounterAt<CounterClass>(rev, 'mass-offline-ab');
const pairs: Record<string, number>[] = [];
for (let pair = 0; pair < Number(pairsArg); pair++) {
  const row: Record<string, number> = {};
  for (const withTopics of [false, true]) {
    const suffix = withTopics ? '_topics' : '';
    collectGarbage();
    const old = measureMassOffline(workload, options, withTopics, Old);
    collectGarbage();
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
