/**
 * A random feed workload over HTTP against `bubble server` + two `bubble core` + `bubble gateway`
 * processes on real Redis: once the cluster is quiet, (a) the badge every online user's core
 * wrote equals the brute-force model of docs/semantics.md, and (b) so does every user's served
 * badge.
 */
import { describe, expect } from 'vitest';
import { twoCoresUnderLoad, useClusterTests } from './cluster-test.js';

describe('cluster: random workload', () => {
  const clusterTest = useClusterTests();

  clusterTest(
    'after quiet, stored badges of online users and served badges of all users equal the model',
    { label: 'work', tag: 'random workload', timeoutMs: 90_000 },
    async (run) => {
      const { c } = run;
      // Quiet once the run is over: no write since lastWriteAt; both cores swept twice after
      // it; (a) checked.
      const { work } = await twoCoresUnderLoad(run, { online: 0.6, ops: 120, clientReads: true });
      await work.expectServedBadges();

      // Nothing ever went back: every accepted write carried the newest fence of its pool.
      c.expectFencesInOrder();
      expect(c.published.length).toBeGreaterThan(0);
      const stale = await c.staleWritesTotal();
      // Reported, not asserted: reconcile() also counts as drift a post ingested between a
      // sweep's read of the post log and its own read of the stored sources.
      const drift = [...(await c.sweepsByNode()).values()].reduce((n, s) => n + s.driftRepaired, 0);
      return (
        `${work.model.online.size} online of 50; ops ${JSON.stringify(Object.fromEntries(work.ops))}; ` +
        `${c.published.length} change messages; stale writes ${stale}; ` +
        `'drift repaired' reported by the cores: ${drift}`
      );
    },
  );
});
