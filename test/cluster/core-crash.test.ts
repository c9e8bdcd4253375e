/**
 * kill -9 of a `bubble core`: the survivor takes every pool of the dead core over exactly once,
 * within the lease plus a sweep and a scheduler round, under a new fencing token; badges of the
 * users of those pools are written correctly again.
 */
import { poolOf } from '@bubble/protocol';
import { waitFor } from '@bubble/test-utils';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildOnce, Cluster, fenceRegressions, heldPools, rng } from './harness.js';
import { FeedWorkload, ids } from './workload.js';

describe('cluster: a core killed with SIGKILL', () => {
  let cluster: Cluster | undefined;

  beforeAll(() => buildOnce(), 300_000);

  afterEach(async () => {
    await cluster?.close();
    cluster = undefined;
  });

  it('the survivor takes each of its pools over exactly once, within the lease, and writes them correctly', async (ctx) => {
    const seed = Number(process.env.CLUSTER_SEED ?? Date.now() % 1_000_000);
    cluster = await Cluster.start({ label: 'kill' });
    const c = cluster;
    try {
      const [, victim, survivor] = await Promise.all([
        c.spawn('server'),
        c.spawn('core'),
        c.spawn('core'),
        c.spawn('gateway'),
      ]);
      await c.waitSettled([victim!, survivor!], 3 * c.leaseMs + 5_000);
      await c.subscribeChanges();

      const work = new FeedWorkload(c, {
        users: ids('u', 50),
        authors: ids('a', 20),
        rand: rng(seed),
        clientReads: false,
      });
      await work.setup(0.7);
      await work.run(25);
      await c.waitSwept([victim!, survivor!], work.lastWriteAt);
      await work.expectStoredBadges(10 * c.tickMs + 2_000);

      const owners = await c.owners();
      const victimPools = owners.flatMap((o, pool) => (o === victim!.nodeId ? [pool] : []));
      expect(victimPools.length).toBe(c.pools / 2);
      const fencesBefore = await c.fences();

      const killedAt = Date.now();
      victim!.signal('SIGKILL');
      expect((await victim!.waitExit()).signal).toBe('SIGKILL');

      // Owned again, under a newer token, held by the survivor: within 3 leases of the kill.
      await waitFor(
        async () => {
          const [now, fences] = await Promise.all([c.owners(), c.fences()]);
          const held = heldPools(survivor!);
          return (
            now.every((o) => o === survivor!.nodeId) &&
            victimPools.every((p) => fences[p]! > fencesBefore[p]! && held.has(p))
          );
        },
        {
          timeoutMs: 3 * c.leaseMs,
          intervalMs: 20,
          message: `the survivor did not take the victim's ${victimPools.length} pools over within ${3 * c.leaseMs} ms`,
        },
      );
      const tookOver = Date.now() - killedAt;

      // Exactly once: each victim pool appears in one 'pools taken' line after the kill, no
      // other pool does, and the survivor dropped nothing.
      const taken = survivor!
        .logs('pools taken', killedAt)
        .flatMap((l) => (l.pools as number[]).map((pool) => ({ pool, at: l.time })));
      expect(taken.map((t) => t.pool).sort((a, b) => a - b)).toEqual(victimPools);
      expect(survivor!.logs('pool dropped', killedAt)).toEqual([]);
      const lastTake = Math.max(...taken.map((t) => t.at)) - killedAt;

      // GET /v1/cluster agrees: one live core owns everything and reports sweeps.
      const status = await c.status();
      expect(status.pools.every((p) => p.owner === survivor!.nodeId)).toBe(true);
      expect(status.nodes.some((n) => n.id === victim!.nodeId)).toBe(false);
      expect(status.sweeps.map((s) => s.node)).toEqual([survivor!.nodeId]);

      // New posts for the online users of the taken-over pools reach their stored badges.
      const orphans = [...work.model.online].filter((u) =>
        victimPools.includes(poolOf(u, c.pools)),
      );
      expect(orphans.length).toBeGreaterThan(0);
      const authors = new Set(orphans.flatMap((u) => [...(work.model.follows.get(u) ?? [])]));
      for (const author of authors) await work.post(author, 2);
      await c.waitSwept([survivor!], work.lastWriteAt);
      await work.expectStoredBadges(10 * c.tickMs + 2_000);
      await work.expectServedBadges();
      expect(fenceRegressions(c.published)).toEqual([]);
      expect(c.malformed).toEqual([]);

      const afterKill = c.published.filter(
        (m) => m.receivedAt > killedAt && victimPools.includes(m.pool),
      );
      expect(afterKill.length).toBeGreaterThan(0);
      const summary =
        `seed ${seed}; ${victimPools.length} pools taken over; all owned again ${tookOver} ms after the kill ` +
        `(last 'pools taken' at +${lastTake} ms; lease ${c.leaseMs} ms, tick ${c.tickMs} ms); ` +
        `${orphans.length} online users in them; ${afterKill.length} change messages since`;
      console.log(`[core crash] ${summary}`);
      await ctx.annotate(summary);
    } catch (err) {
      console.error(`seed ${seed}\n${c.describe()}`);
      throw err;
    }
  }, 90_000);
});
