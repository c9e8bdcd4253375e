/**
 * Partial partitions of one core (regressions; both were bugs). The clusters are set up in
 * beforeAll, so a broken setup fails the file. Fixed by a watchdog that gives up every pool
 * when heartbeats stop reaching the store, a command timeout on the store client, and
 * re-taking (new lock, new fence) a still-assigned pool whose lease was lost.
 *
 * 1. A core cut off from the main Redis while its lock servers still answer keeps its pools
 * forever. Its heartbeats stop, so the leader gives its pools to the other core; but its Redlock
 * locks go on extending themselves every lease/3 (RedlockHeldLock.extend knows nothing of the
 * core's health), and its sweep hangs on the store, so it never drops them. The other core's tryAcquire fails on every sweep: the users
 * of those pools get no badge updates until the partition heals.
 *
 * 2. A core cut off from its lock servers for a moment (its extensions time out) keeps the pools
 * whose leases it lost in its `held` map. The leader still assigns them to it (it heartbeats
 * fine), so CoreNode.followAssignment neither drops nor re-acquires them: the core "owns" pools
 * with no lock at all, until it next has a badge to write in one (then it drops it and takes it
 * again a sweep later, so that write comes a sweep late). Its sweep reports and metrics count
 * those pools as owned.
 */
import { waitFor, type RoleProcess } from '@bubble/test-utils';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildOnce } from '../support/build.js';
import { Cluster } from './harness.js';
import { heldPools } from './pool-tenures.js';
import { type HoldingProxy } from './holding-proxy.js';

describe('cluster: a core partitioned from its lock servers for a moment', () => {
  let c: Cluster;
  let proxies: HoldingProxy[];
  let cut: RoleProcess;

  beforeAll(async () => {
    await buildOnce();
    c = await Cluster.start({ label: 'lockcut' });
    proxies = await Promise.all([0, 1, 2].map((lock) => c.proxy(lock)));
    const [, spawned] = await Promise.all([
      c.spawn('server'),
      c.spawn('core', { BUBBLE_LOCK_REDIS_URLS: proxies.map((p) => p.url).join(',') }),
      c.spawn('gateway'),
    ]);
    cut = spawned!;
    await c.waitSettled([cut], c.settleMs);
    await waitFor(async () => (await c.lockVotes()).every((votes) => votes === 3), {
      timeoutMs: 5_000,
      message: 'the core never held every lock',
    });
  }, 300_000);

  afterAll(async () => {
    await c?.close();
  });

  it('it holds a lock again on every pool assigned to it within a few leases', async () => {
    // Its next lock command (an extension) hangs on all three servers until its leases lapse.
    const before = (await c.lockValues()).map(
      (perServer) => new Set(perServer.filter((v) => v !== null)),
    );
    const pools = heldPools(cut).size;
    const lostBefore = cut.logs('pool lease lost').length;
    const held = proxies.map((proxy) => proxy.arm(/[\s\S]/));
    await Promise.all(held);
    // The partition lasts until every lease has lapsed (each pool's lock is extended on its own
    // clock; released earlier, a late extension could still keep an old lock alive).
    await waitFor(() => cut.logs('pool lease lost').length - lostBefore >= pools, {
      timeoutMs: 3 * c.leaseMs + 2_000,
      message: 'not every lease was lost',
    });
    const lostAt = Date.now();
    for (const proxy of proxies) proxy.release();
    // A lock of a new acquisition (a new value) on a majority, for every pool.
    try {
      await waitFor(async () => (await c.lockVotes(before)).every((votes) => votes >= 2), {
        timeoutMs: 3 * c.leaseMs + 2_000,
        intervalMs: 50,
      });
    } catch (err) {
      const votes = await c.lockVotes(before);
      const owners = await c.owners();
      console.log(
        `[lock partition] ${Date.now() - lostAt} ms after its leases lapsed: the core is still ` +
          `assigned ${owners.filter((o) => o === cut.nodeId).length} pools and holds ` +
          `${heldPools(cut).size} by its log (its last sweep report: ` +
          `${(await c.sweepsByNode()).get(cut.nodeId)?.pools} pools), but ` +
          `${votes.filter((v) => v < 2).length} of them have no lock; 'pool lease lost' ` +
          `warnings: ${cut.logs('pool lease lost').length}, 'pool dropped': ${cut.logs('pool dropped').length}`,
      );
      throw err;
    }
  });
});

describe('cluster: a core partitioned from the main Redis', () => {
  let c: Cluster;
  let proxy: HoldingProxy;
  let cut: RoleProcess;
  let other: RoleProcess;

  beforeAll(async () => {
    await buildOnce();
    c = await Cluster.start({ label: 'part' });
    proxy = await c.proxy();
    const [, a, b] = await Promise.all([
      c.spawn('server'),
      c.spawn('core', { REDIS_URL: proxy.url }),
      c.spawn('core'),
      c.spawn('gateway'),
    ]);
    cut = a!;
    other = b!;
    await c.waitSettled([cut, other], c.settleMs);
  }, 300_000);

  afterAll(async () => {
    await c?.close();
  });

  it('the other core gets its pools within a few leases', async () => {
    // From its next coordination command on, nothing the core sends reaches the store.
    let partitionedAt = 0;
    void proxy.arm(/\{g\}/).then(() => (partitionedAt = Date.now()));
    await waitFor(() => partitionedAt > 0, { timeoutMs: 5_000, message: 'no command to hold' });
    try {
      await waitFor(
        async () =>
          (await c.owners()).every((o) => o === other.nodeId) && heldPools(other).size === c.pools,
        { timeoutMs: 3 * c.leaseMs + 2_000, intervalMs: 50 },
      );
    } catch (err) {
      const owners = await c.owners();
      console.log(
        `[store partition] ${Date.now() - partitionedAt} ms after the partition: the leader ` +
          `assigned ${owners.filter((o) => o === other.nodeId).length} pools to the other core, ` +
          `which holds ${heldPools(other).size}; the cut-off core still holds ` +
          `${heldPools(cut).size} (its 'pool lease lost' warnings: ${cut.logs('pool lease lost').length})`,
      );
      throw err;
    } finally {
      proxy.release();
    }
    expect(heldPools(other).size).toBe(c.pools);
  });
});
