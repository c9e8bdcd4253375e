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
import { poolOf } from '@bubble/protocol';
import { waitFor } from '@bubble/test-utils';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  buildOnce,
  Cluster,
  fenceRegressions,
  heldPools,
  overlappingTenures,
  rng,
  tenures,
  type RoleProcess,
} from './harness.js';
import { FeedWorkload, ids } from './workload.js';

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

describe('cluster: a core paused past its lease', () => {
  let cluster: Cluster | undefined;

  beforeAll(() => buildOnce(), 300_000);

  afterEach(async () => {
    await cluster?.close();
    cluster = undefined;
  });

  it('after SIGCONT no write under its old fencing tokens is accepted and it gives its old pools up', async (ctx) => {
    const seed = Number(process.env.CLUSTER_SEED ?? Date.now() % 1_000_000);
    cluster = await Cluster.start({ label: 'stop' });
    const c = cluster;
    try {
      const [, sleeper, other] = await Promise.all([
        c.spawn('server'),
        c.spawn('core'),
        c.spawn('core'),
        c.spawn('gateway'),
      ]);
      await c.waitSettled([sleeper!, other!], 3 * c.leaseMs + 5_000);
      await c.subscribeChanges();

      const work = new FeedWorkload(c, {
        users: ids('u', 50),
        authors: ids('a', 20),
        rand: rng(seed),
        clientReads: false,
      });
      await work.setup(0.8);
      await work.run(25);
      await c.waitSwept([sleeper!, other!], work.lastWriteAt);
      await work.expectStoredBadges(10 * c.tickMs + 2_000);

      const owners = await c.owners();
      const sleeperPools = owners.flatMap((o, pool) => (o === sleeper!.nodeId ? [pool] : []));
      const oldFence = new Map(
        tenures([sleeper!])
          .filter((t) => t.droppedAt === undefined)
          .map((t) => [t.pool, t.fence]),
      );
      expect([...oldFence.keys()].sort((a, b) => a - b)).toEqual(sleeperPools);
      const staleBefore = await c.staleWrites();
      // The online users of the sleeper's pools and the authors they follow: posts by those
      // give the sleeper something to write the moment it wakes.
      const sleepersUsers = [...work.model.online].filter((u) =>
        sleeperPools.includes(poolOf(u, c.pools)),
      );
      const authors = [
        ...new Set(sleepersUsers.flatMap((u) => [...(work.model.follows.get(u) ?? [])])),
      ];
      expect(authors.length).toBeGreaterThan(0);

      const stoppedAt = Date.now();
      sleeper!.signal('SIGSTOP');
      for (const author of authors) await work.post(author, 1);

      // The other core takes every pool over under a newer token.
      await waitFor(
        async () => {
          const [now, fences] = await Promise.all([c.owners(), c.fences()]);
          const held = heldPools(other!);
          return (
            now.every((o) => o === other!.nodeId) &&
            sleeperPools.every((p) => fences[p]! > oldFence.get(p)! && held.has(p))
          );
        },
        {
          timeoutMs: 3 * c.leaseMs,
          intervalMs: 20,
          message: `the other core did not take the paused core's pools within ${3 * c.leaseMs} ms`,
        },
      );
      const tookOver = Date.now() - stoppedAt;
      // More posts while still paused, written by the new owner under its tokens.
      for (const author of authors) await work.post(author, 1);
      await c.waitSwept([other!], work.lastWriteAt);
      await work.expectStoredBadges(10 * c.tickMs + 2_000);
      const pausedFor = Date.now() - stoppedAt;
      expect(pausedFor).toBeGreaterThan(c.leaseMs);

      const resumedAt = Date.now();
      sleeper!.signal('SIGCONT');

      // It stops writing under each old token: it drops the pool or notices the lost lease.
      const gaveUp = await waitGaveUp(c, sleeper!, oldFence, resumedAt);

      // Then the leader balances the two again; badges come out right.
      await c.waitSettled([sleeper!, other!], 3 * c.leaseMs + 5_000);
      for (const author of authors) await work.post(author, 1);
      await c.waitSwept([sleeper!, other!], work.lastWriteAt);
      await work.expectStoredBadges(10 * c.tickMs + 2_000);

      // No accepted write ever carried a fence older than one already accepted for its pool,
      // and none under the sleeper's old tokens was accepted after it woke.
      expect(fenceRegressions(c.published)).toEqual([]);
      expect(c.malformed).toEqual([]);
      const lateOld = c.published.filter(
        (m) => m.receivedAt >= resumedAt && oldFence.get(m.pool) === m.fence,
      );
      expect(lateOld).toEqual([]);
      // The pause window is the one place two holders may overlap in time; the new holder took
      // over only after the old lease ran out, and the old holder's writes were refused.
      const overlaps = overlappingTenures([sleeper!, other!]).filter(
        ([before]) => before.node !== sleeper!.nodeId || oldFence.get(before.pool) !== before.fence,
      );
      expect(overlaps).toEqual([]);
      for (const [pool, fence] of oldFence) {
        const newer = tenures([other!]).find((t) => t.pool === pool && t.fence > fence)!;
        expect(newer.takenAt - stoppedAt).toBeGreaterThanOrEqual(c.leaseMs / 2);
      }

      const staleAfter = await c.staleWrites();
      const stale = staleAfter.reduce((sum, n, pool) => sum + n - staleBefore[pool]!, 0);
      const refusedLogged = sleeper!
        .logs('pool dropped', resumedAt)
        .filter((l) => l.reason === 'fencing token is stale').length;
      expect(refusedLogged).toBeLessThanOrEqual(stale);
      const summary =
        `seed ${seed}; paused ${pausedFor} ms (lease ${c.leaseMs} ms); ${sleeperPools.length} pools taken over ` +
        `${tookOver} ms after SIGSTOP; resumed core gave its old pools up by +${gaveUp.lastAt - resumedAt} ms: ` +
        `${JSON.stringify(gaveUp.how)}; stale writes rejected by Redis: ${stale}; ` +
        `'pool lease lost' warnings after resume: ${sleeper!.logs('pool lease lost', resumedAt).length}; ` +
        `${c.published.length} change messages checked`;
      console.log(`[core pause] ${summary}`);
      await ctx.annotate(summary);
    } catch (err) {
      console.error(`seed ${seed}\n${c.describe()}`);
      throw err;
    }
  }, 90_000);

  it('a fenced write delayed in flight past the lease is refused and the old owner drops the pool', async (ctx) => {
    const seed = Number(process.env.CLUSTER_SEED ?? Date.now() % 1_000_000);
    cluster = await Cluster.start({ label: 'hold' });
    const c = cluster;
    try {
      const proxy = await c.proxy();
      const [, sleeper, other] = await Promise.all([
        c.spawn('server'),
        c.spawn('core', { REDIS_URL: proxy.url }),
        c.spawn('core'),
        c.spawn('gateway'),
      ]);
      await c.waitSettled([sleeper!, other!], 3 * c.leaseMs + 5_000);
      await c.subscribeChanges();

      const work = new FeedWorkload(c, {
        users: ids('u', 50),
        authors: ids('a', 20),
        rand: rng(seed),
        clientReads: false,
      });
      await work.setup(0.8);
      await work.run(10);
      await c.waitSwept([sleeper!, other!], work.lastWriteAt);
      await work.expectStoredBadges(10 * c.tickMs + 2_000);

      const owners = await c.owners();
      const sleeperPools = owners.flatMap((o, pool) => (o === sleeper!.nodeId ? [pool] : []));
      const oldFence = new Map(
        tenures([sleeper!])
          .filter((t) => t.droppedAt === undefined)
          .map((t) => [t.pool, t.fence]),
      );
      const sleepersUsers = [...work.model.online].filter((u) =>
        sleeperPools.includes(poolOf(u, c.pools)),
      );
      const authors = [
        ...new Set(sleepersUsers.flatMap((u) => [...(work.model.follows.get(u) ?? [])])),
      ];
      expect(authors.length).toBeGreaterThan(0);
      const staleBefore = await c.staleWrites();

      // Hold the sleeper's next badge write on the wire, and freeze it right then.
      let heldPool: number | undefined;
      const channel = new RegExp(`\\{p:(\\d+)\\}:changes`);
      void proxy.arm(channel).then((match) => {
        sleeper!.signal('SIGSTOP');
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
      await waitFor(
        async () => {
          const [now, fences] = await Promise.all([c.owners(), c.fences()]);
          const held = heldPools(other!);
          return (
            now.every((o) => o === other!.nodeId) &&
            sleeperPools.every((p) => fences[p]! > oldFence.get(p)! && held.has(p))
          );
        },
        {
          timeoutMs: 3 * c.leaseMs,
          intervalMs: 20,
          message: `the other core did not take the frozen core's pools within ${3 * c.leaseMs} ms`,
        },
      );
      const tookOver = Date.now() - stoppedAt;
      for (const author of authors) await work.post(author, 1);
      await c.waitSwept([other!], work.lastWriteAt);
      await work.expectStoredBadges(10 * c.tickMs + 2_000);

      // The delayed write arrives now, under the old token: refused and counted.
      const releasedAt = Date.now();
      proxy.release();
      await waitFor(async () => (await c.staleWrites())[pool]! > staleBefore[pool]!, {
        timeoutMs: 5_000,
        message: `the delayed write to pool ${pool} was not refused`,
      });
      // It changed nothing: the stored badges are still the model's.
      expect(await work.storedMismatches([...work.model.online])).toEqual([]);

      sleeper!.signal('SIGCONT');
      const dropped = await sleeper!.waitLog(
        (l) => l.msg === 'pool dropped' && l.pool === pool && l.time >= releasedAt,
        2 * c.leaseMs + 2_000,
        `did not drop pool ${pool} after its write was refused`,
      );
      // Refused by the fence, or — when its heartbeat timer fires first after the pause — given up
      // by the watchdog because no heartbeat reached the store for half a lease.
      expect(['fencing token is stale', 'cut off from the store']).toContain(dropped.reason);
      const gaveUp = await waitGaveUp(c, sleeper!, oldFence, releasedAt);

      await c.waitSettled([sleeper!, other!], 3 * c.leaseMs + 5_000);
      for (const author of authors) await work.post(author, 1);
      await c.waitSwept([sleeper!, other!], work.lastWriteAt);
      await work.expectStoredBadges(10 * c.tickMs + 2_000);

      expect(fenceRegressions(c.published)).toEqual([]);
      expect(c.malformed).toEqual([]);
      expect(
        c.published.filter((m) => m.receivedAt >= releasedAt && oldFence.get(m.pool) === m.fence),
      ).toEqual([]);
      const staleAfter = await c.staleWrites();
      const stale = staleAfter.reduce((sum, n, p) => sum + n - staleBefore[p]!, 0);
      const reported = (await c.sweepsByNode()).get(sleeper!.nodeId)?.staleWritesRejected;
      expect(reported).toBe(stale);
      const summary =
        `seed ${seed}; write to pool ${pool} held on the wire, core frozen; ${sleeperPools.length} pools ` +
        `taken over ${tookOver} ms later; stale writes rejected by Redis: ${stale} (the core's own ` +
        `count: ${reported}); old pools given up: ${JSON.stringify(gaveUp.how)}`;
      console.log(`[core pause, write in flight] ${summary}`);
      await ctx.annotate(summary);
    } catch (err) {
      console.error(`seed ${seed}\n${c.describe()}`);
      throw err;
    }
  }, 90_000);
});
