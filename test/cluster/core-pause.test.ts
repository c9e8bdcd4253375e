/**
 * A `bubble core` frozen (SIGSTOP) longer than its lease, then resumed (SIGCONT): meanwhile the
 * other core takes its pools under newer fencing tokens. Once resumed, the old owner must not
 * get a single write accepted under its old tokens: per pool, the fences of the published
 * (accepted) writes never go back, and the resumed core gives its old pools up.
 *
 * A plain pause finds the resumed core reading the new assignment (or its lapsed lease) before
 * it writes, so it gives up its pools without a write reaching Redis. The second test freezes
 * the core the moment one of its fenced writes is on the wire (a proxy holds that write), so
 * the write reaches Redis only after the pool has a newer owner: the fence must refuse it.
 */
import { waitFor, type RoleProcess } from '@bubble/test-utils';
import { describe, expect } from 'vitest';
import { twoCoresUnderLoad, useClusterTests } from './cluster-test.js';
import { heldFences, overlappingTenures, tenures } from './pool-tenures.js';
import { type Cluster } from './harness.js';
import type { FeedWorkload } from './workload.js';

/**
 * Waits until the resumed core stopped writing under each of its old tokens: it logged dropping
 * the pool, or logged losing its lease (a pool the leader hands straight back to it stays in its
 * hands, lease lost, until it next writes there: see partitions.test.ts). Returns how.
 */
async function waitGaveUp(
  c: Cluster,
  core: RoleProcess,
  oldFence: Map<number, number>,
  since: number,
): Promise<{ how: Record<string, number>; lastAt: number }> {
  let result: { how: Record<string, number>; lastAt: number } | undefined;
  await waitFor(
    () => {
      const how: Record<string, number> = {};
      let lastAt = 0;
      for (const [pool, fence] of oldFence) {
        const tenure = tenures([core]).find((t) => t.pool === pool && t.fence === fence);
        const lost = core.logs('pool lease lost', since).find((l) => l.pool === pool);
        const way = tenure?.droppedAt
          ? `dropped: ${tenure.dropReason}`
          : lost
            ? 'lease lost (kept)'
            : undefined;
        if (!way) return false;
        how[way] = (how[way] ?? 0) + 1;
        lastAt = Math.max(lastAt, tenure?.droppedAt ?? lost!.time);
      }
      result = { how, lastAt };
      return true;
    },
    {
      timeoutMs: 2 * c.leaseMs + 2_000,
      intervalMs: 20,
      message: `${core.name} did not give its old pools up`,
    },
  );
  return result!;
}

/** Accepted writes published at `since` or later under one of the `oldFence` tokens. */
function acceptedUnder(c: Cluster, oldFence: Map<number, number>, since: number) {
  return c.published.filter((m) => m.receivedAt >= since && oldFence.get(m.pool) === m.fence);
}

/** The leader balances the two cores again; new posts come out right; no fence went back. */
async function settlesAgain(
  c: Cluster,
  work: FeedWorkload,
  cores: RoleProcess[],
  authors: string[],
): Promise<void> {
  await c.waitSettled(cores, c.settleMs);
  for (const author of authors) await work.post(author, 1);
  await work.expectWrittenBy(cores);
  c.expectFencesInOrder();
}

describe('cluster: a core paused past its lease', () => {
  const clusterTest = useClusterTests();

  clusterTest(
    'after SIGCONT no write under its old fencing tokens is accepted and it gives its old pools up',
    { label: 'stop', tag: 'core pause', timeoutMs: 90_000 },
    async (run) => {
      const { c } = run;
      const { cores, work } = await twoCoresUnderLoad(run, { online: 0.8, ops: 25 });
      const [sleeper, other] = cores;

      const sleeperPools = await c.poolsOf(sleeper);
      const oldFence = heldFences(sleeper);
      expect([...oldFence.keys()].sort((a, b) => a - b)).toEqual(sleeperPools);
      const staleBefore = await c.staleWritesTotal();
      // The authors followed by the online users of the sleeper's pools: posts by those give
      // the sleeper something to write the moment it wakes.
      const authors = work.authorsFollowedBy(work.onlineIn(sleeperPools));
      expect(authors.length).toBeGreaterThan(0);

      const stoppedAt = Date.now();
      sleeper.signal('SIGSTOP');
      for (const author of authors) await work.post(author, 1);

      // The other core takes every pool over under a newer token.
      await c.waitTookOver(other, oldFence);
      const tookOver = Date.now() - stoppedAt;
      // More posts while still paused, written by the new owner under its tokens.
      for (const author of authors) await work.post(author, 1);
      await work.expectWrittenBy([other]);
      const pausedFor = Date.now() - stoppedAt;
      expect(pausedFor).toBeGreaterThan(c.leaseMs);

      const resumedAt = Date.now();
      sleeper.signal('SIGCONT');

      // It stops writing under each old token within one tick: it drops the pool or notices
      // the lost lease (by its own log's clock), and no refused write comes after that.
      const gaveUp = await waitGaveUp(c, sleeper, oldFence, resumedAt);
      const stoppedWritingAfter = gaveUp.lastAt - resumedAt;
      expect(
        stoppedWritingAfter,
        `gave its old pools up ${stoppedWritingAfter} ms after SIGCONT (tick ${c.tickMs} ms)`,
      ).toBeLessThanOrEqual(c.tickMs);
      const staleAtGiveUp = await c.staleWritesTotal();
      await settlesAgain(c, work, cores, authors);
      expect(await c.staleWritesTotal()).toBe(staleAtGiveUp);

      // None under the sleeper's old tokens was accepted after it woke.
      expect(acceptedUnder(c, oldFence, resumedAt)).toEqual([]);
      // The pause window is the one place two holders may overlap in time; the new holder took
      // over only after the old lease ran out, and the old holder's writes were refused.
      const overlaps = overlappingTenures(cores).filter(
        ([before]) => before.node !== sleeper.nodeId || oldFence.get(before.pool) !== before.fence,
      );
      expect(overlaps).toEqual([]);
      for (const [pool, fence] of oldFence) {
        const newer = tenures([other]).find((t) => t.pool === pool && t.fence > fence)!;
        expect(newer.takenAt - stoppedAt).toBeGreaterThanOrEqual(c.leaseMs / 2);
      }

      const stale = (await c.staleWritesTotal()) - staleBefore;
      const refusedLogged = sleeper
        .logs('pool dropped', resumedAt)
        .filter((l) => l.reason === 'fencing token is stale').length;
      expect(refusedLogged).toBeLessThanOrEqual(stale);
      return (
        `paused ${pausedFor} ms (lease ${c.leaseMs} ms); ${sleeperPools.length} pools taken over ` +
        `${tookOver} ms after SIGSTOP; resumed core gave its old pools up by +${stoppedWritingAfter} ms ` +
        `(deadline one tick, ${c.tickMs} ms): ` +
        `${JSON.stringify(gaveUp.how)}; stale writes rejected by Redis: ${stale}; ` +
        `'pool lease lost' warnings after resume: ${sleeper.logs('pool lease lost', resumedAt).length}; ` +
        `${c.published.length} change messages checked`
      );
    },
  );

  clusterTest(
    'a fenced write delayed in flight past the lease is refused and the old owner drops the pool',
    { label: 'hold', tag: 'core pause, write in flight', timeoutMs: 90_000 },
    async (run) => {
      const { c } = run;
      const proxy = await c.proxy();
      const { cores, work } = await twoCoresUnderLoad(run, {
        online: 0.8,
        ops: 10,
        firstCoreEnv: { REDIS_URL: proxy.url },
      });
      const [sleeper, other] = cores;

      const sleeperPools = await c.poolsOf(sleeper);
      const oldFence = heldFences(sleeper);
      const authors = work.authorsFollowedBy(work.onlineIn(sleeperPools));
      expect(authors.length).toBeGreaterThan(0);
      const staleBefore = await c.staleWrites();

      // Hold the sleeper's next badge write on the wire, and freeze it right then.
      let heldPool: number | undefined;
      const channel = new RegExp(`\\{p:(\\d+)\\}:changes`);
      void proxy.arm(channel).then((match) => {
        sleeper.signal('SIGSTOP');
        heldPool = Number(match[1]);
      });
      for (const author of authors) await work.post(author, 1);
      await waitFor(() => heldPool !== undefined, {
        timeoutMs: 10 * c.tickMs + 2_000,
        message: 'the sleeper never wrote a badge',
      });
      const stoppedAt = Date.now();
      const pool = heldPool!;
      expect(sleeperPools).toContain(pool);

      // The other core takes over every pool of the sleeper under newer tokens and writes.
      await c.waitTookOver(other, oldFence);
      const tookOver = Date.now() - stoppedAt;
      for (const author of authors) await work.post(author, 1);
      await work.expectWrittenBy([other]);

      // The delayed write arrives now, under the old token: refused and counted.
      const releasedAt = Date.now();
      proxy.release();
      await waitFor(async () => (await c.staleWrites())[pool]! > staleBefore[pool]!, {
        timeoutMs: 5_000,
        message: `the delayed write to pool ${pool} was not refused`,
      });
      // It changed nothing: the stored badges are still the model's.
      expect(await work.storedMismatches([...work.model.online])).toEqual([]);

      sleeper.signal('SIGCONT');
      const dropped = await sleeper.waitLog(
        (l) => l.msg === 'pool dropped' && l.pool === pool && l.time >= releasedAt,
        2 * c.leaseMs + 2_000,
        `did not drop pool ${pool} after its write was refused`,
      );
      // Refused by the fence, or — when its heartbeat timer fires first after the pause — given up
      // by the watchdog because no heartbeat reached the store for half a lease.
      expect(['fencing token is stale', 'cut off from the store']).toContain(dropped.reason);
      const gaveUp = await waitGaveUp(c, sleeper, oldFence, releasedAt);
      await settlesAgain(c, work, cores, authors);

      expect(acceptedUnder(c, oldFence, releasedAt)).toEqual([]);
      const stale = (await c.staleWritesTotal()) - staleBefore.reduce((sum, n) => sum + n, 0);
      const reported = (await c.sweepsByNode()).get(sleeper.nodeId)?.staleWritesRejected;
      expect(reported).toBe(stale);
      return (
        `write to pool ${pool} held on the wire, core frozen; ${sleeperPools.length} pools ` +
        `taken over ${tookOver} ms later; stale writes rejected by Redis: ${stale} (the core's own ` +
        `count: ${reported}); old pools given up: ${JSON.stringify(gaveUp.how)}`
      );
    },
  );
});
