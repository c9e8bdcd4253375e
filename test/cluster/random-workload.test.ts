/**
 * A random feed workload over HTTP against `bubble server` + two `bubble core` + `bubble gateway`
 * processes on real Redis: once the cluster is quiet, (a) the badge every online user's core
 * wrote equals the brute-force model of docs/semantics.md, and (b) so does every user's served
 * badge.
 */
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildOnce, Cluster, fenceRegressions, rng } from './harness.js';
import { FeedWorkload, ids } from './workload.js';

describe('cluster: random workload', () => {
  let cluster: Cluster | undefined;

  beforeAll(() => buildOnce(), 300_000);

  afterEach(async () => {
    await cluster?.close();
    cluster = undefined;
  });

  it('after quiet, stored badges of online users and served badges of all users equal the model', async (ctx) => {
    const seed = Number(process.env.CLUSTER_SEED ?? Date.now() % 1_000_000);
    cluster = await Cluster.start({ label: 'work' });
    const c = cluster;
    try {
      const [, coreA, coreB] = await Promise.all([
        c.spawn('server'),
        c.spawn('core'),
        c.spawn('core'),
        c.spawn('gateway'),
      ]);
      await c.waitSettled([coreA!, coreB!], 3 * c.leaseMs + 5_000);
      await c.subscribeChanges();

      const work = new FeedWorkload(c, {
        users: ids('u', 50),
        authors: ids('a', 20),
        rand: rng(seed),
      });
      await work.setup(0.6);
      await work.run(120);

      // Quiet: no write since lastWriteAt; both cores swept twice after it.
      await c.waitSwept([coreA!, coreB!], work.lastWriteAt);
      await work.expectStoredBadges(10 * c.tickMs + 2_000);
      await work.expectServedBadges();

      // Nothing ever went back: every accepted write carried the newest fence of its pool.
      expect(fenceRegressions(c.published)).toEqual([]);
      expect(c.malformed).toEqual([]);
      expect(c.published.length).toBeGreaterThan(0);
      const stale = (await c.staleWrites()).reduce((a, b) => a + b, 0);
      // Reported, not asserted: reconcile() also counts as drift a post ingested between a
      // sweep's read of the post log and its own read of the stored sources.
      const drift = [...(await c.sweepsByNode()).values()].reduce((n, s) => n + s.driftRepaired, 0);
      const summary =
        `seed ${seed}; ${work.model.online.size} online of 50; ops ${JSON.stringify(Object.fromEntries(work.ops))}; ` +
        `${c.published.length} change messages; stale writes ${stale}; ` +
        `'drift repaired' reported by the cores: ${drift}`;
      console.log(`[random workload] ${summary}`);
      await ctx.annotate(summary);
    } catch (err) {
      console.error(`seed ${seed}\n${c.describe()}`);
      throw err;
    }
  }, 90_000);
});
