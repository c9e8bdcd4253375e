/**
 * The dashboard's rolling history (packages/gateway/src/dashboard/history.ts) on the embedded
 * store engine, with the clock in the test's hands: sweeps counted once each, rates per second,
 * per-core and per-gateway figures, a ring that never grows past its capacity. And the committed
 * browser bundle matches its sources.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { SweepReport } from '@bubble/protocol';
import { MemoryStore } from '@bubble/store';
import { Counter, Gauge, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { ClusterHistory, quantile } from '../../packages/gateway/src/dashboard/history.js';
import { RingBuffer } from '../../packages/gateway/src/dashboard/ring-buffer.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function report(node: string, at: number, fields: Partial<SweepReport> = {}): SweepReport {
  return {
    node,
    at,
    pools: 10,
    users: 100,
    changed: 0,
    durationMs: 1,
    reconcileMs: 0,
    redisCommands: 3,
    staleWritesRejected: 0,
    driftRepaired: 0,
    ...fields,
  };
}

function setup(start = 1_000_000) {
  let now = start;
  const store = new MemoryStore({ pools: 4, now: () => now });
  const registry = new Registry();
  const connections = new Gauge({
    name: 'bubble_ws_connections',
    help: 'h',
    registers: [registry],
  });
  const pushes = new Counter({
    name: 'bubble_gateway_pushes_total',
    help: 'h',
    registers: [registry],
  });
  const history = new ClusterHistory(
    { cluster: store.coordination, registry, now: () => now },
    { intervalMs: 5000, capacity: 4, sweepPollMs: 500 },
  );
  return {
    store,
    history,
    connections,
    pushes,
    advance: (ms: number) => (now += ms),
    now: () => now,
  };
}

describe('ClusterHistory', () => {
  it('counts each sweep once and turns the interval into rates, quantiles and per-core figures', async () => {
    const { store, history, advance, now } = setup();
    await store.coordination.reportSweep(report('core-old', now() - 60_000, { changed: 999 }));
    history.start();
    history.stop(); // the test drives polls and samples itself
    const lease = 30_000;
    for (const id of ['core-a', 'core-b'])
      await store.coordination.heartbeat(
        { id, role: 'core', startedAt: now(), seenAt: now() },
        lease,
      );

    for (let i = 1; i <= 5; i++) {
      advance(1000);
      await store.coordination.reportSweep(
        report('core-a', now(), {
          changed: 10,
          durationMs: 10 * i,
          driftRepaired: i === 3 ? 2 : 0,
        }),
      );
      await store.coordination.reportSweep(
        report('core-b', now(), { changed: 4, durationMs: 100, staleWritesRejected: 1 }),
      );
      await history.pollSweeps();
      await history.pollSweeps(); // a second read of the same reports counts nothing
    }
    const sample = (await history.sample())!;
    expect(sample.at).toBe(now());
    expect(sample.sweeps).toBe(10);
    expect(sample.changedPerSecond).toBeCloseTo((5 * 10 + 5 * 4) / 5);
    expect(sample.staleWritesRefused).toBe(5);
    expect(sample.driftRepaired).toBe(2);
    expect(sample.sweepP50Ms).toBe(50);
    expect(sample.sweepP99Ms).toBe(100);
    expect(sample.online).toBe(200); // the users the two live cores hold, 100 each
    // The report stored before the history started belongs to no interval, and its core is gone.
    expect(sample.cores).toEqual({
      'core-a': { sweepMs: 50, changedPerSecond: 10 },
      'core-b': { sweepMs: 100, changedPerSecond: 4 },
    });

    // A quiet interval: zero rates, no quantiles, the cores still listed.
    advance(5000);
    const quiet = (await history.sample())!;
    expect(quiet).toMatchObject({ sweeps: 0, changedPerSecond: 0, sweepP50Ms: null });
    expect(quiet.cores['core-a']).toEqual({ sweepMs: null, changedPerSecond: 0 });
    expect(history.samples(sample.at)).toEqual([quiet]);
  });

  it('reads each gateway from its heartbeat and this process from its registry', async () => {
    const { store, history, connections, pushes, advance, now } = setup();
    history.start();
    history.stop();
    const beat = (id: string, figures: { connections: number; pushed: number }) =>
      store.coordination.heartbeat(
        { id, role: 'gateway', startedAt: 0, seenAt: now(), live: figures } as never,
        30_000,
      );
    await beat('gw-1', { connections: 7, pushed: 100 });
    connections.set(3);
    pushes.inc(50);
    const first = (await history.sample())!;
    expect(first.gateways).toEqual({ 'gw-1': { connections: 7, pushesPerSecond: null } });
    expect(first.local).toMatchObject({ connections: 3, pushesPerSecond: null });

    advance(5000);
    await beat('gw-1', { connections: 9, pushed: 150 });
    pushes.inc(25);
    const second = (await history.sample())!;
    expect(second.gateways['gw-1']).toEqual({ connections: 9, pushesPerSecond: 10 });
    expect(second.local.pushesPerSecond).toBe(5);
    expect(second.local.postsPerSecond).toBeNull(); // no such metric in this registry
  });

  it('keeps at most its capacity, oldest dropped first', async () => {
    const { history, advance } = setup();
    history.start();
    history.stop();
    const times: number[] = [];
    for (let i = 0; i < 10; i++) {
      advance(5000);
      times.push((await history.sample())!.at);
    }
    expect(history.samples().map((s) => s.at)).toEqual(times.slice(-4));
  });
});

describe('RingBuffer and quantile', () => {
  it('a ring wraps around in order', () => {
    const ring = new RingBuffer<number>(3);
    expect(ring.toArray()).toEqual([]);
    for (let i = 1; i <= 7; i++) ring.push(i);
    expect(ring.toArray()).toEqual([5, 6, 7]);
    expect(ring.size).toBe(3);
    expect(() => new RingBuffer(0)).toThrow(/capacity/);
  });

  it('nearest-rank quantiles', () => {
    expect(quantile([], 0.5)).toBeNull();
    expect(quantile([4], 0.99)).toBe(4);
    expect(quantile([1, 2, 3, 4], 0.5)).toBe(2);
    expect(quantile([1, 2, 3, 4], 0.99)).toBe(4);
  });
});

describe('the committed dashboard bundle', () => {
  it('is what scripts/build-dashboard.mjs makes of the browser sources', () => {
    execFileSync(process.execPath, ['packages/gateway/scripts/build-dashboard.mjs', '--check'], {
      cwd: ROOT,
      stdio: 'pipe',
    });
  });
});
