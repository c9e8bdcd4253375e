/**
 * A/B of bench compute's 200-follow round (100k users, 1,000 authors posting per round): the
 * FeedCounter of a git revision against the working tree's, alternated in one process on the
 * same workload, so that a machine shared with other work slows both alike.
 *
 *   node --expose-gc --import tsx packages/bench/scripts/compute-ab.ts <rev> [pairs=3]
 */
import { DAY_MS } from '@bubble/protocol';
import { FeedCounter } from '../../core/src/feed-counter.js';
import {
  buildWorkload,
  followedAuthors,
  percentile,
  postBatch,
  postsByAuthor,
} from '../src/workload.js';
import { collectGarbage, feedCounterAt } from './counter-at-revision.js';

const [rev = 'HEAD', pairsArg = '3'] = process.argv.slice(2);
const LOOKBACK = 7 * DAY_MS;
const NOW = Date.UTC(2026, 10, 30);

interface Counter {
  advanceTo(t: number): void;
  setUser(user: string, follows: readonly string[], readAt: number | null): string[];
  loadAuthor(author: string, posts: readonly { id: string; ts: number }[]): void;
  recompute(user: string): void;
  addPost(author: string, id: string, ts: number): void;
  takeChanged(): { ids: Int32Array; counts: Int32Array };
}
type CounterClass = new (options: { lookbackMs: number }) => Counter;

const workload = buildWorkload({
  seed: 42 + 200,
  users: 100_000,
  authors: 50_000,
  follows: { fixed: 200 },
  windowPosts: 500_000,
  now: NOW,
});
const byAuthor = postsByAuthor(workload);

function usersPerSec(Class: CounterClass): number {
  collectGarbage();
  const counter = new Class({ lookbackMs: LOOKBACK });
  counter.advanceTo(NOW);
  for (let u = 0; u < workload.users.length; u++) {
    const names = followedAuthors(workload, u);
    for (const author of counter.setUser(workload.users[u]!, names, workload.readAt[u]!)) {
      counter.loadAuthor(author, byAuthor.get(Number(author.slice(1))) ?? []);
    }
  }
  for (const user of workload.users) counter.recompute(user);
  counter.takeChanged();
  const times: number[] = [];
  for (let round = 1; round <= 7; round++) {
    const ts = NOW + round * 1000;
    const batch = postBatch(workload, 1000, ts, `r${round}`);
    const started = performance.now();
    counter.advanceTo(ts);
    for (const post of batch) counter.addPost(workload.authors[post.author]!, post.id, post.ts);
    counter.takeChanged();
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  return workload.users.length / (percentile(times, 50) / 1000);
}

const Old = await feedCounterAt<CounterClass>(rev, 'compute-ab');
const results: { before: number; after: number }[] = [];
for (let i = 0; i < Number(pairsArg); i++) {
  // ABBA: each side goes first as often, so neither pays more for the other's garbage.
  const New = FeedCounter as unknown as CounterClass;
  let before: number;
  let after: number;
  if (i % 2 === 0) {
    before = usersPerSec(Old);
    after = usersPerSec(New);
  } else {
    after = usersPerSec(New);
    before = usersPerSec(Old);
  }
  results.push({ before: Math.round(before), after: Math.round(after) });
  console.log(JSON.stringify({ pair: i + 1, ...results[i] }));
}
const sum = (k: 'before' | 'after') => results.reduce((s, r) => s + r[k], 0);
console.log(
  JSON.stringify({ rev, ratio: Math.round((sum('after') / sum('before')) * 1000) / 1000 }),
);
