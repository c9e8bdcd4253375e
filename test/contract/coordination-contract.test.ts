/**
 * The Coordination contract (packages/store/src/coordination/coordination.ts), run against the memory and
 * the Redis implementation: leader lease, node heartbeats, assignment, fencing counters, sweep
 * ticks and sweep reports. Leases expire in real time on both engines, so the ttls are small.
 */
import { ManualClock } from '@bubble/protocol';
import type { NodeInfo, SweepReport } from '@bubble/protocol';
import { RedisKeys, type Coordination } from '@bubble/store';
import {
  startRedisCluster,
  uniquePrefix,
  waitFor,
  type RedisClusterHandle,
} from '@bubble/test-utils';
import { Cluster, Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
// Deep imports until the store's barrel exports these classes.
import { MemoryCoordination } from '../../packages/store/src/coordination/memory-coordination.js';
import { RedisCoordination } from '../../packages/store/src/coordination/redis-coordination.js';
import { T0, TEST_POOLS, describeEachEngine, scanKeys } from '../support/engines.js';

/** Lets time pass for checks that something does NOT happen within it. */
const elapse = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function nodeInfo(id: string, seenAt: number, extra: Partial<NodeInfo> = {}): NodeInfo {
  return { id, role: 'core', startedAt: T0, seenAt, ...extra };
}

function report(node: string, at: number, changed: number): SweepReport {
  return {
    node,
    at,
    pools: 4,
    users: 120,
    changed,
    durationMs: 7,
    reconcileMs: 2,
    redisCommands: 9,
    staleWritesRejected: 0,
    driftRepaired: 1,
  };
}

describeEachEngine('coordination contract', (ctx, engine) => {
  const cleanups: Array<() => Promise<void>> = [];
  let shared: MemoryCoordination | undefined;

  afterEach(async () => {
    shared = undefined;
    await Promise.all(cleanups.splice(0).map((cleanup) => cleanup()));
  });

  /**
   * One participant's view of the test's coordination state: for Redis its own connection on
   * the test's key prefix, as separate processes would have; in memory the one shared instance.
   */
  function participant(): Coordination {
    if (engine === 'memory') return (shared ??= new MemoryCoordination());
    const { redisUrl, prefix } = ctx();
    const client = new Redis(redisUrl!, { maxRetriesPerRequest: 2 });
    cleanups.push(() =>
      client.quit().then(
        () => undefined,
        () => client.disconnect(),
      ),
    );
    return new RedisCoordination({ client, keys: new RedisKeys(prefix!, TEST_POOLS) });
  }

  describe('leader lease', () => {
    it('has one leader at a time, and the holder may take it again', async () => {
      const [a, b] = [participant(), participant()];
      expect(await a.leader()).toBeNull();
      expect(await a.tryLead('a', 10_000)).toBe(true);
      expect(await b.tryLead('b', 10_000)).toBe(false);
      expect(await a.tryLead('a', 10_000)).toBe(true);
      expect(await b.leader()).toBe('a');
    });

    it('is kept past its first ttl by a renewal', async () => {
      const [a, b] = [participant(), participant()];
      expect(await a.tryLead('a', 200)).toBe(true);
      expect(await a.tryLead('a', 10_000)).toBe(true);
      await elapse(300);
      expect(await b.tryLead('b', 10_000)).toBe(false);
      expect(await b.leader()).toBe('a');
    });

    it('is taken over once the holder stops renewing', async () => {
      const [a, b] = [participant(), participant()];
      expect(await a.tryLead('a', 150)).toBe(true);
      expect(await b.tryLead('b', 10_000)).toBe(false);
      await waitFor(() => b.tryLead('b', 10_000), { timeoutMs: 3_000, message: 'b never led' });
      expect(await a.leader()).toBe('b');
      expect(await a.tryLead('a', 10_000)).toBe(false);
    });

    it('is given up by resign, but only by its holder', async () => {
      const [a, b] = [participant(), participant()];
      expect(await a.tryLead('a', 10_000)).toBe(true);
      await b.resign('b');
      expect(await b.leader()).toBe('a');
      await a.resign('a');
      expect(await b.leader()).toBeNull();
      expect(await b.tryLead('b', 10_000)).toBe(true);
      await a.resign('a');
      expect(await a.leader()).toBe('b');
    });
  });

  describe('nodes', () => {
    it("lists nodes live for their ttl from the store's now, with what they announced", async () => {
      const [a, b] = [participant(), participant()];
      // Whatever a node's own clock says (seenAt years ago, or an hour ahead), its liveness is
      // the store's: the clocks of the nodes never meet.
      const core = nodeInfo('core-1', Date.now() + 3_600_000, { url: 'http://127.0.0.1:9001' });
      const server = nodeInfo('server-1', T0, { role: 'server' });
      await a.heartbeat(server, 60_000);
      await b.heartbeat(core, 1_000);
      expect(await a.liveNodes()).toEqual([core, server]);
      await waitFor(async () => (await a.liveNodes()).length === 1, { timeoutMs: 10_000 });
      expect(await a.liveNodes()).toEqual([server]);
    });

    it('renews a node with each heartbeat and forgets a lapsed one', async () => {
      const [a, b] = [participant(), participant()];
      await b.heartbeat(nodeInfo('core-1', T0), 1_000);
      await elapse(600);
      await b.heartbeat(nodeInfo('core-1', T0 + 800), 1_000);
      await elapse(600);
      // Past the first heartbeat's ttl: the second one keeps it live.
      expect(await a.liveNodes()).toEqual([nodeInfo('core-1', T0 + 800)]);
      await waitFor(async () => (await a.liveNodes()).length === 0, { timeoutMs: 10_000 });
      // Seen as lapsed once, it is gone: only a new heartbeat brings it back.
      await b.heartbeat(nodeInfo('core-1', T0 + 2_000), 1_000);
      expect(await a.liveNodes()).toEqual([nodeInfo('core-1', T0 + 2_000)]);
    });

    it('forgets a removed node at once', async () => {
      const [a, b] = [participant(), participant()];
      await a.heartbeat(nodeInfo('core-1', T0), 60_000);
      await a.heartbeat(nodeInfo('core-2', T0), 60_000);
      await b.removeNode('core-1');
      await b.removeNode('never-seen');
      expect((await a.liveNodes()).map((node) => node.id)).toEqual(['core-2']);
    });
  });

  it('round-trips the assignment, the latest one winning', async () => {
    const [leader, core] = [participant(), participant()];
    expect(await core.assignment()).toBeNull();
    await leader.setAssignment({ generation: 3, owners: ['core-1', null, 'core-2'] });
    expect(await core.assignment()).toEqual({ generation: 3, owners: ['core-1', null, 'core-2'] });
    await leader.setAssignment({ generation: 4, owners: ['core-2', 'core-2', null] });
    expect(await core.assignment()).toEqual({ generation: 4, owners: ['core-2', 'core-2', null] });
  });

  it('hands out strictly increasing fences per pool, even to concurrent callers', async () => {
    const [a, b] = [participant(), participant()];
    expect(await a.currentFence(7)).toBe(0);
    const first = await a.nextFence(7);
    const second = await b.nextFence(7);
    expect(first).toBeGreaterThan(0);
    expect(second).toBeGreaterThan(first);
    expect(await b.currentFence(7)).toBe(second);
    expect(await a.currentFence(8)).toBe(0);

    const tokens = await Promise.all(
      Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? a : b).nextFence(7)),
    );
    const sorted = [...tokens].sort((x, y) => x - y);
    expect(new Set(tokens).size).toBe(20);
    expect(sorted[0]).toBeGreaterThan(second);
    for (const token of tokens) expect(Number.isSafeInteger(token)).toBe(true);
    expect(await a.currentFence(7)).toBe(sorted[19]);
    expect(await b.nextFence(8)).toBeGreaterThan(0);
  });

  describe('ticks', () => {
    it('reaches every subscriber in publish order, and stops after unsubscribing', async () => {
      const [leader, core1, core2] = [participant(), participant(), participant()];
      const seen1: number[] = [];
      const seen2: number[] = [];
      const off1 = await core1.onTick((seq) => seen1.push(seq));
      const off2 = await core2.onTick((seq) => seen2.push(seq));
      cleanups.push(off1, off2);

      for (const seq of [1, 2, 3]) await leader.publishTick(seq);
      await waitFor(() => seen1.length === 3 && seen2.length === 3, { message: 'ticks missing' });
      expect(seen1).toEqual([1, 2, 3]);
      expect(seen2).toEqual([1, 2, 3]);

      await off1();
      await off1();
      await leader.publishTick(4);
      await waitFor(() => seen2.length === 4, { message: 'tick 4 missing' });
      expect(seen1).toEqual([1, 2, 3]);
    });

    it('does not replay ticks published before subscribing', async () => {
      const [leader, core] = [participant(), participant()];
      await leader.publishTick(1);
      const seen: number[] = [];
      cleanups.push(await core.onTick((seq) => seen.push(seq)));
      await leader.publishTick(2);
      await waitFor(() => seen.length > 0, { message: 'tick 2 missing' });
      expect(seen).toEqual([2]);
    });
  });

  it('keeps the latest sweep report of each node', async () => {
    const [core1, core2, server] = [participant(), participant(), participant()];
    expect(await server.sweepReports()).toEqual([]);
    await core2.reportSweep(report('core-2', T0, 5));
    await core1.reportSweep(report('core-1', T0, 3));
    await core1.reportSweep(report('core-1', T0 + 1_000, 4));
    expect(await server.sweepReports()).toEqual([
      report('core-1', T0 + 1_000, 4),
      report('core-2', T0, 5),
    ]);
  });

  if (engine === 'redis') {
    it('stores its state in the {g} and {p:N} keys that keys.ts builds', async () => {
      const c = participant();
      await c.tryLead('a', 10_000);
      await c.heartbeat(nodeInfo('core-1', T0), 60_000);
      await c.setAssignment({ generation: 1, owners: [null] });
      await c.nextFence(3);
      await c.reportSweep(report('core-1', T0, 0));
      const { admin, prefix } = ctx();
      const keys = new RedisKeys(prefix!, TEST_POOLS);
      expect((await scanKeys(admin!, keys.all())).sort()).toEqual(
        [
          keys.leader(),
          keys.nodesAlive(),
          keys.nodesInfo(),
          keys.assignment(),
          keys.fence(3),
          keys.sweepReports(),
        ].sort(),
      );
    });
  }
});

describe('MemoryCoordination lease clock', () => {
  it('expires the leader lease by the clock it was given', async () => {
    const clock = new ManualClock(T0);
    const coordination = new MemoryCoordination({ now: () => clock.now() });
    expect(await coordination.tryLead('a', 1_000)).toBe(true);
    clock.advance(999);
    expect(await coordination.tryLead('b', 1_000)).toBe(false);
    expect(await coordination.tryLead('a', 1_000)).toBe(true);
    clock.advance(999);
    expect(await coordination.leader()).toBe('a');
    clock.advance(1);
    expect(await coordination.leader()).toBeNull();
    expect(await coordination.tryLead('b', 1_000)).toBe(true);
  });
});

describe('RedisCoordination on a 3-master Redis Cluster', () => {
  let cluster: RedisClusterHandle | undefined;
  const clients: Cluster[] = [];

  beforeAll(async () => {
    cluster = await startRedisCluster({ masters: 3 });
  });

  afterAll(async () => {
    await Promise.all(clients.map((client) => client.quit().catch(() => client.disconnect())));
    await cluster?.stop();
  });

  it('runs every operation in the {g} slot, ticks included', async () => {
    const keys = new RedisKeys(uniquePrefix('cluster'), TEST_POOLS);
    const [a, b] = [0, 1].map(() => {
      const client = new Cluster(cluster!.nodes, { enableAutoPipelining: true });
      clients.push(client);
      return new RedisCoordination({ client, keys });
    }) as [RedisCoordination, RedisCoordination];

    expect(await a.tryLead('a', 10_000)).toBe(true);
    expect(await b.tryLead('b', 10_000)).toBe(false);
    await a.resign('a');
    expect(await b.tryLead('b', 10_000)).toBe(true);

    await a.heartbeat(nodeInfo('core-1', T0), 200);
    await b.heartbeat(nodeInfo('core-2', T0), 60_000);
    await waitFor(async () => (await a.liveNodes()).map((node) => node.id).join() === 'core-2', {
      timeoutMs: 10_000,
    });
    await b.removeNode('core-2');
    expect(await a.liveNodes()).toEqual([]);

    await b.setAssignment({ generation: 1, owners: ['core-1', null] });
    expect(await a.assignment()).toEqual({ generation: 1, owners: ['core-1', null] });
    const [first, second] = [await a.nextFence(5), await b.nextFence(5)];
    expect(second).toBeGreaterThan(first);
    expect(await a.currentFence(5)).toBe(second);
    await a.reportSweep(report('core-1', T0, 2));
    expect(await b.sweepReports()).toEqual([report('core-1', T0, 2)]);

    const seen: number[] = [];
    const off = await a.onTick((seq) => seen.push(seq));
    await b.publishTick(1);
    await b.publishTick(2);
    await waitFor(() => seen.length === 2, { message: 'ticks missing on the cluster' });
    // A keyless PUBLISH goes to any node of a Cluster: two ticks may arrive in either order
    // (a core sweeps on each, whatever its number).
    expect(seen.sort()).toEqual([1, 2]);
    await off();
  });
});
