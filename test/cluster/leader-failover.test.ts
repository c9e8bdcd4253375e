/**
 * Two `bubble server` processes: killing the leader (SIGKILL) makes the standby lead within one
 * lease (plus a round of slack); ticks and sweeps go on, the assignment is kept as it was, and a
 * new post still reaches the stored badge of an online user.
 */
import { mulberry32 } from '@bubble/protocol';
import { waitFor } from '@bubble/test-utils';
import { describe, expect } from 'vitest';
import { useClusterTests } from './cluster-test.js';
import { FeedWorkload, ids } from './workload.js';

describe('cluster: the leading server killed with SIGKILL', () => {
  const clusterTest = useClusterTests();

  clusterTest(
    'the standby leads within a lease and the sweeps go on',
    { label: 'lead', tag: 'leader failover', timeoutMs: 90_000 },
    async ({ c, seed }) => {
      // The first server leads; the second waits.
      const leader = await c.spawn('server');
      await leader.waitLog((l) => l.msg === 'leading', 5_000, 'never led');
      const [standby, coreA, coreB] = await Promise.all([
        c.spawn('server'),
        c.spawn('core'),
        c.spawn('core'),
        c.spawn('gateway'),
      ]);
      await c.waitSettled([coreA, coreB], c.settleMs);
      expect((await c.status()).leader).toBe(leader.nodeId);
      expect(standby.logs('leading')).toEqual([]);
      await c.subscribeTicks();
      await c.subscribeChanges();

      const work = new FeedWorkload(c, {
        users: ids('u', 30),
        authors: ids('a', 10),
        rand: mulberry32(seed),
        clientReads: false,
      });
      await work.setup(0.7);
      await work.run(10);
      await work.expectWrittenBy([coreA, coreB]);
      const ownersBefore = await c.owners();
      const generationBefore = await c.generation();

      const killedAt = Date.now();
      leader.signal('SIGKILL');
      await leader.waitExit();

      const deadline = 2 * c.leaseMs;
      await waitFor(
        async () =>
          (await c.status()).leader === standby.nodeId && standby.logs('leading').length > 0,
        {
          timeoutMs: deadline,
          intervalMs: 20,
          message: `the standby did not lead within ${deadline} ms`,
        },
      );
      const ledAt = standby.logs('leading')[0]!.time;
      const failover = ledAt - killedAt;
      expect(failover).toBeLessThanOrEqual(deadline);

      // Ticks come again, from the new leader, and both cores sweep after it took over.
      await waitFor(() => c.ticks.some((t) => t.receivedAt > ledAt), {
        timeoutMs: 5 * c.tickMs,
        message: 'no tick after the standby took over',
      });
      const ticksGap = c.ticks.find((t) => t.receivedAt > killedAt)!.receivedAt - killedAt;
      await c.waitSwept([coreA, coreB], ledAt);

      // The new leader kept the assignment: nothing moved, nobody dropped a pool.
      expect(await c.owners()).toEqual(ownersBefore);
      expect(await c.generation()).toBe(generationBefore);
      for (const core of [coreA, coreB]) expect(core.logs('pool dropped', killedAt)).toEqual([]);

      // A new post reaches the stored badges of the online users following its author.
      const followed = [...work.model.online].flatMap((u) => [
        ...(work.model.follows.get(u) ?? []),
      ]);
      expect(followed.length).toBeGreaterThan(0);
      const sentAt = Date.now();
      await work.post(followed[0]!, 1);
      await work.post(followed[followed.length - 1]!, 1);
      await work.expectStoredBadges();
      const reached = Date.now() - sentAt;
      expect(c.published.some((m) => m.receivedAt > sentAt)).toBe(true);
      c.expectFencesInOrder();
      return (
        `standby led ${failover} ms after the kill (lease ${c.leaseMs} ms); ` +
        `first tick after the kill at +${ticksGap} ms; new post in the stored badges within ${reached} ms`
      );
    },
  );
});
