/**
 * kill -9 of a `bubble core`: the survivor takes every pool of the dead core over exactly once,
 * within the lease plus a sweep and a scheduler round, under a new fencing token; badges of the
 * users of those pools are written correctly again.
 */
import { describe, expect } from 'vitest';
import { twoCoresUnderLoad, useClusterTests } from './cluster-test.js';

describe('cluster: a core killed with SIGKILL', () => {
  const clusterTest = useClusterTests();

  clusterTest(
    'the survivor takes each of its pools over exactly once, within the lease, and writes them correctly',
    { label: 'kill', tag: 'core crash', timeoutMs: 90_000 },
    async (run) => {
      const { c } = run;
      const { cores, work } = await twoCoresUnderLoad(run, { online: 0.7, ops: 25 });
      const [victim, survivor] = cores;

      const victimPools = await c.poolsOf(victim);
      expect(victimPools.length).toBe(c.pools / 2);
      const fencesBefore = await c.fences();

      const killedAt = Date.now();
      victim.signal('SIGKILL');
      expect((await victim.waitExit()).signal).toBe('SIGKILL');

      // Owned again, under a newer token, held by the survivor: within 3 leases of the kill.
      await c.waitTookOver(
        survivor,
        new Map(victimPools.map((pool) => [pool, fencesBefore[pool]!])),
      );
      const tookOver = Date.now() - killedAt;

      // Exactly once: each victim pool appears in one 'pools taken' line after the kill, no
      // other pool does, and the survivor dropped nothing.
      const taken = survivor
        .logs('pools taken', killedAt)
        .flatMap((l) => (l.pools as number[]).map((pool) => ({ pool, at: l.time })));
      expect(taken.map((t) => t.pool).sort((a, b) => a - b)).toEqual(victimPools);
      expect(survivor.logs('pool dropped', killedAt)).toEqual([]);
      const lastTake = Math.max(...taken.map((t) => t.at)) - killedAt;

      // GET /v1/cluster agrees: one live core owns everything and reports sweeps.
      const status = await c.status();
      expect(status.pools.every((p) => p.owner === survivor.nodeId)).toBe(true);
      expect(status.nodes.some((n) => n.id === victim.nodeId)).toBe(false);
      expect(status.sweeps.map((s) => s.node)).toEqual([survivor.nodeId]);

      // New posts for the online users of the taken-over pools reach their stored badges.
      const orphans = work.onlineIn(victimPools);
      expect(orphans.length).toBeGreaterThan(0);
      for (const author of work.authorsFollowedBy(orphans)) await work.post(author, 2);
      await work.expectWrittenBy([survivor]);
      await work.expectServedBadges();
      c.expectFencesInOrder();

      const afterKill = c.published.filter(
        (m) => m.receivedAt > killedAt && victimPools.includes(m.pool),
      );
      expect(afterKill.length).toBeGreaterThan(0);
      return (
        `${victimPools.length} pools taken over; all owned again ${tookOver} ms after the kill ` +
        `(last 'pools taken' at +${lastTake} ms; lease ${c.leaseMs} ms, tick ${c.tickMs} ms); ` +
        `${orphans.length} online users in them; ${afterKill.length} change messages since`
      );
    },
  );
});
