/**
 * kill -9 of a `bubble core`: the survivor takes every pool of the dead core over exactly once,
 * within the lease plus 2 s (measured from the kill to the survivor's last 'pools taken'), under a
 * new fencing token; badges of the users of those pools are written correctly again. SIGTERM of
 * a core hands its pools over at once: the survivor owns them within 2 s.
 */
import { describe, expect } from 'vitest';
import { twoCoresUnderLoad, useClusterTests } from './cluster-test.js';
import { expectOwnedAgainWithin } from './deadlines.js';

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

      // Owned again, under a newer token, held by the survivor: within lease + 2 s of the kill.
      const tookOver = await expectOwnedAgainWithin(
        c,
        survivor,
        new Map(victimPools.map((pool) => [pool, fencesBefore[pool]!])),
        killedAt,
        c.leaseMs + 2_000,
      );

      // Exactly once: each victim pool appears in one 'pools taken' line after the kill, no
      // other pool does, and the survivor dropped nothing.
      const taken = survivor
        .logs('pools taken', killedAt)
        .flatMap((l) => (l.pools as number[]).map((pool) => ({ pool, at: l.time })));
      expect(taken.map((t) => t.pool).sort((a, b) => a - b)).toEqual(victimPools);
      expect(survivor.logs('pool dropped', killedAt)).toEqual([]);

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
        `(deadline lease + 2 s = ${c.leaseMs + 2_000} ms; tick ${c.tickMs} ms); ` +
        `${orphans.length} online users in them; ${afterKill.length} change messages since`
      );
    },
  );
  clusterTest(
    'a core stopped with SIGTERM hands its pools over: the survivor owns them within 2 s',
    // The production lease and tick: how soon pools are re-owned must not hang on them.
    { label: 'term', tag: 'core SIGTERM', timeoutMs: 120_000, leaseMs: 10_000, tickMs: 1_000 },
    async (run) => {
      const { c } = run;
      const { cores, work } = await twoCoresUnderLoad(run, { online: 0.7, ops: 25 });
      const [leaving, survivor] = cores;
      const leavingPools = await c.poolsOf(leaving);
      const fencesBefore = await c.fences();

      const stoppedAt = Date.now();
      leaving.signal('SIGTERM');
      const tookOver = await expectOwnedAgainWithin(
        c,
        survivor,
        new Map(leavingPools.map((pool) => [pool, fencesBefore[pool]!])),
        stoppedAt,
        2_000,
      );
      const exit = await leaving.waitExit();
      expect(exit.code).toBe(0);
      expect(leaving.logs('pool dropped', stoppedAt).every((l) => l.reason === 'shutdown')).toBe(
        true,
      );
      expect(survivor.logs('pool dropped', stoppedAt)).toEqual([]);

      const orphans = work.onlineIn(leavingPools);
      for (const author of work.authorsFollowedBy(orphans)) await work.post(author, 2);
      await work.expectWrittenBy([survivor]);
      await work.expectServedBadges();
      c.expectFencesInOrder();
      return (
        `${leavingPools.length} pools handed over; all owned again ${tookOver} ms after SIGTERM ` +
        `(deadline 2,000 ms; lease ${c.leaseMs} ms, tick ${c.tickMs} ms); ` +
        `${orphans.length} online users in them`
      );
    },
  );
});
