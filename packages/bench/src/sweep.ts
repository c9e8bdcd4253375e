import { mkdtemp, rm } from 'node:fs/promises';
import os, { tmpdir } from 'node:os';
import path from 'node:path';
import type { BadgeService } from '@bubble/badges';
import { HOUR_MS, mulberry32 } from '@bubble/protocol';
import type { RedisStore } from '@bubble/store';
import type { RoleProcess } from '@bubble/test-utils';
import type { Redis } from 'ioredis';
import { startBenchRedis } from './bench-redis.js';
import { processCpuSeconds, spawnRole, stopAll } from './children.js';
import { LivePosts } from './live-posts.js';
import { KEY_PREFIX } from './live-stack.js';
import { spawnProbedCore, type ProbeReader, type ProbeRecord } from './probe-reader.js';
import { callsBetween, commandCalls, redisCpuSeconds } from './redis-probe.js';
import {
  buildScenarioWorkload,
  SCENARIO_WORKLOAD_DEFAULTS,
  percentile,
  ZipfSampler,
  type Workload,
  type ScenarioWorkloadOptions,
} from './workload.js';

export interface SweepOptions extends ScenarioWorkloadOptions {
  pools: number;
  postsPerSec: number;
  /** Sweeps measured in the first phase, and its time bound. */
  sweeps: number;
  seconds: number;
  /** The same for the phase with doubled follows (0 sweeps skips it). */
  doubledSweeps: number;
  doubledSeconds: number;
  /** Sweeps after the users are loaded and posts start that are not measured. */
  warmupSweeps: number;
  /** Users brought online at a time while the core runs. */
  onlineBatch: number;
  /** Bound on the core loading every user. */
  loadSeconds: number;
  /** Extra node flags and environment for the core child, for investigations. */
  coreNodeArgs: string[];
  coreEnv: Record<string, string>;
}

export const SWEEP_DEFAULTS: SweepOptions = {
  ...SCENARIO_WORKLOAD_DEFAULTS,
  pools: 100,
  postsPerSec: 1000,
  // A p99 of 60 sweeps is their maximum; of 200, the second largest.
  sweeps: 200,
  seconds: 240,
  doubledSweeps: 30,
  doubledSeconds: 90,
  warmupSweeps: 3,
  onlineBatch: 2000,
  loadSeconds: 600,
  coreNodeArgs: [],
  coreEnv: {},
};

const TICK_MS = 1000;
const PRESENCE_TTL_MS = 3 * HOUR_MS;

/**
 * bench.md "sweep": one bubble-core process owning 100 pools with 100k online users on a real
 * redis-server, while 1,000 posts/s arrive; then the same from scratch with every follow set
 * doubled. The core is the real `bubble core` (and `bubble server` ticks and assigns it the
 * pools); a preloaded probe counts every Redis command the core process sends, per sweep.
 */
export async function benchSweep(partial: Partial<SweepOptions> = {}) {
  const options = { ...SWEEP_DEFAULTS, ...partial };
  const { log } = options;
  const workload = buildScenarioWorkload('sweep', options);
  const base = await runSetup(
    'follows ×1',
    workload,
    workload.follows,
    options,
    options.sweeps,
    options.seconds,
  );

  let doubled: PhaseFigures | { error: string } | undefined;
  if (options.doubledSweeps > 0) {
    const widened = widenFollows(workload, 2, options.followCap, options.seed + 1);
    try {
      doubled = await runSetup(
        'follows ×2',
        workload,
        widened,
        options,
        options.doubledSweeps,
        options.doubledSeconds,
      );
    } catch (err) {
      // The first phase's figures stand; say why the comparison is missing.
      log(`sweep: the doubled-follows phase failed: ${String(err)}`);
      doubled = { error: String(err instanceof Error ? err.message : err).slice(0, 500) };
    }
  }
  const comparable = doubled && !('error' in doubled) ? doubled : undefined;
  return {
    scenario: 'sweep',
    users: options.users,
    pools: options.pools,
    authors: options.authors,
    windowPosts: options.windowPosts,
    tickMs: TICK_MS,
    postsPerSecTarget: options.postsPerSec,
    ...phaseJson(base),
    ...(doubled && { doubled: 'error' in doubled ? doubled : phaseJson(doubled) }),
    ...(comparable && {
      followsRatio: round2(comparable.meanFollows / base.meanFollows),
      redisCmdsRatio: round2(comparable.cmdsMedian / base.cmdsMedian),
      sweepPathCmdsRatio: round2(comparable.partsMean.sweep / base.partsMean.sweep),
      reconcileCmdsRatio: round2(
        comparable.partsMean.reconcile / Math.max(1, base.partsMean.reconcile),
      ),
    }),
  };
}

function phaseJson(f: PhaseFigures) {
  return {
    meanFollows: round2(f.meanFollows),
    sweeps: f.sweeps,
    postsPerSec: f.postsPerSec,
    sweepP50Ms: f.p50Ms,
    sweepP99Ms: f.p99Ms,
    sweepMaxMs: f.maxMs,
    reconcileP50Ms: f.reconcileP50Ms,
    reconcileP99Ms: f.reconcileP99Ms,
    redisCmdsPerSweep: f.cmdsMedian,
    redisCmdsPerSweepMean_sweepPath: f.partsMean.sweep,
    redisCmdsPerSweepMean_reconcile: f.partsMean.reconcile,
    redisCmdsPerSweepMean_background: f.partsMean.background,
    coreReportedCmdsPerSweep: f.reportedCmdsMedian,
    changedPerSweep: f.changedMedian,
    sweepIntervalP50Ms: f.intervalP50Ms,
    coreCpuMsPerSweep: f.coreCpuMsPerSweep,
    redisCpuMsPerSweep: f.redisCpuMsPerSweep,
    redisCpuUsPerChangedBadge: f.redisCpuUsPerChangedBadge,
    coreCpuUsPerChangedBadge: f.coreCpuUsPerChangedBadge,
    driftRepaired: f.driftRepaired,
    minUsersHeld: f.minUsers,
    minPoolsHeld: f.minPools,
    loadAverage: f.loadAverage,
    seedSeconds: round2(f.seedSeconds),
    onboardSeconds: round2(f.onboardSeconds),
    cmdsByNamePerSweep: f.byName,
    serverCallsPerSweep: f.serverCalls,
  };
}

/**
 * One setup from scratch: its own redis-server seeded with `follows`, `bubble server` and
 * `bubble core` children, users brought online, posts at the target rate, then the sweeps
 * measured. Everything it started is stopped before it returns or throws.
 */
async function runSetup(
  name: string,
  workload: Workload,
  follows: Int32Array[],
  options: SweepOptions,
  sweeps: number,
  seconds: number,
): Promise<PhaseFigures> {
  const { log } = options;
  const redis = await startBenchRedis(options);
  const { store, service, admin } = redis;
  const dir = await mkdtemp(path.join(tmpdir(), 'bubble-sweep-'));
  const children: RoleProcess[] = [];
  let driver: LivePosts | undefined;
  try {
    const seedStarted = performance.now();
    await seed(store, service, workload, follows, options);
    const seedSeconds = (performance.now() - seedStarted) / 1000;
    log(`sweep: ${name}: seeded in ${seedSeconds.toFixed(1)} s; starting bubble server and core`);

    const env = {
      REDIS_URL: redis.url,
      BUBBLE_TICK: String(TICK_MS),
      BUBBLE_POOLS: String(options.pools),
      BUBBLE_KEY_PREFIX: KEY_PREFIX,
      BUBBLE_FOLLOW_CAP: String(options.followCap),
      LOG_LEVEL: 'info',
    };
    children.push(await spawnRole({ role: 'server', env, log }));
    const { probe } = await spawnProbedCore({
      dir,
      env: { ...env, ...options.coreEnv },
      nodeArgs: options.coreNodeArgs,
      children,
      log,
    });
    await probe.holdsPools(options.pools, log);
    log(
      `sweep: ${name}: the core holds every pool; users come online ${options.onlineBatch} at a time`,
    );
    const onboardStarted = performance.now();
    const loaded = await onboard(store, workload, probe, options);
    const onboardSeconds = (performance.now() - onboardStarted) / 1000;
    log(
      `sweep: ${name}: core holds ${loaded.report.users} users after ${onboardSeconds.toFixed(1)} s`,
    );

    driver = new LivePosts(service, workload, {
      perSecond: options.postsPerSec,
      pacing: 'steady',
      idPrefix: 'l',
      label: 'sweep',
      log,
    });
    driver.start();
    await probe.skip(options.warmupSweeps, 120);
    const figures = await measurePhase(name, probe, driver, admin, sweeps, seconds, options);
    await driver.stop();
    return { ...figures, meanFollows: meanFollows(follows), seedSeconds, onboardSeconds };
  } finally {
    await driver?.stop().catch(() => {});
    await stopAll(children);
    await redis.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

/** Follows, posts and read cursors, through the store and service APIs. */
async function seed(
  store: RedisStore,
  service: BadgeService,
  workload: Workload,
  follows: readonly Int32Array[],
  options: SweepOptions,
): Promise<void> {
  const { log } = options;
  const n = workload.users.length;
  let edges = 0;
  for (let i = 0; i < n; i += 1000) {
    const end = Math.min(i + 1000, n);
    const writes: Promise<unknown>[] = [];
    for (let u = i; u < end; u++) {
      const names = Array.from(follows[u]!, (a) => workload.authors[a]!);
      edges += names.length;
      writes.push(store.follows.replace(workload.users[u]!, names));
    }
    await Promise.all(writes);
    if (end % 20_000 === 0) log(`sweep: follows of ${end} users stored (${edges} edges)`);
  }
  const batch = 5000;
  for (let i = 0; i < workload.posts.length; i += batch) {
    await service.ingestPosts(
      workload.posts
        .slice(i, i + batch)
        .map((p) => ({ author: workload.authors[p.author]!, id: p.id, ts: p.ts })),
    );
  }
  log(`sweep: ${workload.posts.length} posts of the last 7 days ingested`);
  const cursors: Promise<number>[] = [];
  workload.readAt.forEach((readAt, u) => {
    if (readAt !== null) cursors.push(store.cursors.advanceFeedReadAt(workload.users[u]!, readAt));
  });
  await Promise.all(cursors);
  log(`sweep: ${cursors.length} read cursors set`);
}

/**
 * Brings the users online in batches while the core runs (as users arrive), a batch once the
 * core is at most one batch behind, so no sweep loads more than about two batches.
 */
async function onboard(
  store: RedisStore,
  workload: Workload,
  probe: ProbeReader,
  options: SweepOptions,
) {
  const deadline = performance.now() + options.loadSeconds * 1000;
  const n = workload.users.length;
  const batch = options.onlineBatch;
  let lastLog = performance.now();
  for (let i = 0; i < n; i += batch) {
    const end = Math.min(i + batch, n);
    const users = workload.users.slice(i, end).map((user) => ({ user, ttlMs: PRESENCE_TTL_MS }));
    await store.presence.setOnline(users);
    const seconds = (deadline - performance.now()) / 1000;
    const record = await probe.waitFor(
      (r) => r.report.users >= end - batch,
      seconds,
      (r) => `core holds ${r.report.users} of ${end} online users`,
      options.log,
    );
    if (performance.now() - lastLog > 10_000) {
      lastLog = performance.now();
      options.log(
        `sweep: ${end} users online, core holds ${record.report.users} ` +
          `(last sweep ${record.report.durationMs} ms)`,
      );
    }
  }
  return probe.waitFor(
    (r) => r.report.users === n && r.report.pools === options.pools,
    (deadline - performance.now()) / 1000,
    (r) => `core holds ${r.report.users} users in ${r.report.pools} pools`,
    options.log,
  );
}

interface PhaseFigures {
  sweeps: number;
  postsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  reconcileP50Ms: number;
  reconcileP99Ms: number;
  maxMs: number;
  cmdsMedian: number;
  reportedCmdsMedian: number;
  changedMedian: number;
  /** Means per sweep of the parts of commandParts() (background comes in bursts). */
  partsMean: { sweep: number; reconcile: number; background: number };
  /** The machine's 1-minute load average when the phase started and ended. */
  loadAverage: [number, number];
  byName: Record<string, number>;
  /** Commands redis-server executed per sweep (the post driver's and Lua's included), by name. */
  serverCalls: Record<string, number>;
  intervalP50Ms: number;
  coreCpuMsPerSweep: number | null;
  redisCpuMsPerSweep: number;
  /** Over the phase, CPU ÷ badges the sweeps changed; Redis's includes the post driver's ingest. */
  redisCpuUsPerChangedBadge: number;
  coreCpuUsPerChangedBadge: number | null;
  /** Badges the core's reconciliation reported repaired during the phase. */
  driftRepaired: number;
  /** Fewest users and pools a measured sweep held (all of them unless leases were lost). */
  minUsers: number;
  minPools: number;
  meanFollows: number;
  seedSeconds: number;
  onboardSeconds: number;
}

async function measurePhase(
  name: string,
  probe: ProbeReader,
  driver: LivePosts,
  admin: Redis,
  sweeps: number,
  seconds: number,
  options: SweepOptions,
): Promise<PhaseFigures> {
  options.log(`sweep: measuring ${name}: up to ${sweeps} sweeps or ${seconds} s`);
  const startedAt = performance.now();
  const loadBefore = round2(os.loadavg()[0]!);
  const sentBefore = driver.sent;
  const callsBefore = await commandCalls(admin);
  const redisCpuBefore = await redisCpuSeconds(admin);
  const coreCpuBefore = await processCpuSeconds(probe.corePid);
  const records = await probe.collect(sweeps, seconds);
  const coreCpuAfter = await processCpuSeconds(probe.corePid);
  const redisCpu = (await redisCpuSeconds(admin)) - redisCpuBefore;
  const elapsed = (performance.now() - startedAt) / 1000;
  const posts = driver.sent - sentBefore;
  const calls = callsBetween(callsBefore, await commandCalls(admin));
  const serverCalls: Record<string, number> = {};
  for (const [cmd, n] of [...calls].sort((a, b) => b[1] - a[1])) {
    serverCalls[cmd] = Math.round(n / records.length);
  }
  const sorted = (f: (r: ProbeRecord) => number) => records.map(f).sort((a, b) => a - b);
  const durations = sorted((r) => r.report.durationMs);
  // Reports of cores from before the reconciliation moved after the write-back lack it.
  const reconciles = sorted((r) => r.report.reconcileMs ?? 0);
  const intervals = records
    .slice(1)
    .map((r, i) => r.report.at - records[i]!.report.at)
    .sort((a, b) => a - b);
  const changedTotal = Math.max(
    1,
    records.reduce((sum, r) => sum + r.report.changed, 0),
  );
  const byName: Record<string, number> = {};
  for (const r of records) {
    for (const [cmd, count] of Object.entries(r.byName)) byName[cmd] = (byName[cmd] ?? 0) + count;
  }
  for (const cmd of Object.keys(byName)) byName[cmd] = round2(byName[cmd]! / records.length);
  const figures: PhaseFigures = {
    sweeps: records.length,
    postsPerSec: Math.round(posts / elapsed),
    p50Ms: percentile(durations, 50),
    p99Ms: percentile(durations, 99),
    maxMs: durations[durations.length - 1] ?? 0,
    reconcileP50Ms: percentile(reconciles, 50),
    reconcileP99Ms: percentile(reconciles, 99),
    cmdsMedian: percentile(
      sorted((r) => r.commands),
      50,
    ),
    reportedCmdsMedian: percentile(
      sorted((r) => r.report.redisCommands),
      50,
    ),
    changedMedian: percentile(
      sorted((r) => r.report.changed),
      50,
    ),
    partsMean: {
      sweep: mean(records.map((r) => commandParts(r.byName).sweep)),
      reconcile: mean(records.map((r) => commandParts(r.byName).reconcile)),
      background: mean(records.map((r) => commandParts(r.byName).background)),
    },
    loadAverage: [loadBefore, round2(os.loadavg()[0]!)],
    byName,
    serverCalls,
    intervalP50Ms: percentile(intervals, 50),
    // Per sweep over the phase; Redis's includes the post driver's ingest.
    coreCpuMsPerSweep:
      coreCpuBefore === null || coreCpuAfter === null
        ? null
        : Math.round(((coreCpuAfter - coreCpuBefore) * 1000) / records.length),
    redisCpuMsPerSweep: Math.round((redisCpu * 1000) / records.length),
    redisCpuUsPerChangedBadge: round2((redisCpu * 1e6) / changedTotal),
    coreCpuUsPerChangedBadge:
      coreCpuBefore === null || coreCpuAfter === null
        ? null
        : round2(((coreCpuAfter - coreCpuBefore) * 1e6) / changedTotal),
    driftRepaired:
      records[records.length - 1]!.report.driftRepaired - records[0]!.report.driftRepaired,
    minUsers: Math.min(...records.map((r) => r.report.users)),
    minPools: Math.min(...records.map((r) => r.report.pools)),
    meanFollows: 0,
    seedSeconds: 0,
    onboardSeconds: 0,
  };
  options.log(
    `sweep: ${name}: ${figures.sweeps} sweeps, p50 ${figures.p50Ms} ms, p99 ${figures.p99Ms} ms, ` +
      `${figures.cmdsMedian} commands and ${figures.changedMedian} changed per sweep (median), ` +
      `${figures.postsPerSec} posts/s; CPU per sweep: core ${figures.coreCpuMsPerSweep} ms, ` +
      `redis-server ${figures.redisCpuMsPerSweep} ms`,
  );
  return figures;
}

/** Each user's follows grown to `factor` × as many (capped), drawn as buildWorkload draws them. */
function widenFollows(workload: Workload, factor: number, cap: number, seed: number): Int32Array[] {
  const random = mulberry32(seed);
  const authors = workload.authors.length;
  const rank = new ZipfSampler(authors, 0.9, random);
  const chosen = new Uint8Array(authors);
  return workload.follows.map((old) => {
    const want = Math.min(old.length * factor, cap, authors);
    const list = new Int32Array(want);
    list.set(old);
    for (const a of old) chosen[a] = 1;
    let n = old.length;
    while (n < want) {
      const a = random() < 0.8 ? rank.next() : Math.floor(random() * authors);
      if (chosen[a] === 1) continue;
      chosen[a] = 1;
      list[n++] = a;
    }
    for (const a of list) chosen[a] = 0;
    return list;
  });
}

/**
 * A sweep's commands in three parts. `reconcile`: the reconciliation's reads of a few users'
 * inputs (SMEMBERS, HGET), their counts (countPosts script or ZCOUNTs) and the window reloads
 * after a mismatch (ZRANGEBYSCORE; with every user loaded, nothing else sends it). `background`:
 * what the core sends by the clock rather than per sweep, between two reports: pool lock
 * extensions (Redlock's scripts) and heartbeats (MULTI ZADD HSET EXEC). `sweep`: the rest, the
 * sweep's own path (assignment, log reads, presence expiry, badge writes, its report).
 */
function commandParts(byName: Record<string, number>) {
  const n = (name: string) => byName[name] ?? 0;
  const reconcile =
    n('evalsha:countPosts') + n('zcount') + n('smembers') + n('hget') + n('zrangebyscore');
  const heartbeats = n('multi');
  const background = n('evalsha:other') + heartbeats * 4;
  const total = Object.values(byName).reduce((a, b) => a + b, 0);
  return { reconcile, background, sweep: total - reconcile - background };
}

function mean(values: readonly number[]): number {
  return round2(values.reduce((a, b) => a + b, 0) / Math.max(1, values.length));
}

function meanFollows(follows: readonly Int32Array[]): number {
  let total = 0;
  for (const list of follows) total += list.length;
  return total / follows.length;
}

function round2(x: number): number {
  return Math.round(x * 100) / 100;
}
