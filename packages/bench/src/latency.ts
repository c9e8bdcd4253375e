import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DAY_MS, HOUR_MS, poolOf } from '@bubble/protocol';
import type { RoleProcess } from '@bubble/test-utils';
import type { Redis } from 'ioredis';
import { startBenchRedis } from './bench-redis.js';
import {
  processContextSwitches,
  processCpuTimes,
  processRssBytes,
  spawnRole,
  stopAll,
} from './children.js';
import { forkDriver, type DriverHandle } from './driver-process.js';
import { RawHttpConnection, httpRequest } from './http-client.js';
import {
  KEY_PREFIX,
  benchSecrets,
  cpuProfileArgs,
  cpuShares,
  cpuSnapshot,
  LoopLag,
  machineFacts,
  roleEnv,
  round2,
  seedStore,
  sleep,
  startGateway,
  wallNow,
} from './live-stack.js';
import { spawnProbedCore, type ProbeReader, type ProbeRecord } from './probe-reader.js';
import { logProfiles } from './profile-summary.js';
import { redisCpuSeconds } from './redis-probe.js';
import { pushFigures, readPushMetrics, type PushSnapshot } from './push-metrics.js';
import { buildScenarioWorkload, percentile, type Workload } from './workload.js';
import { measureCeiling, WS_CEILING_DEFAULTS, type CeilingFigures } from './ws-ceiling.js';
import type { WsBatch, WsConnectResult, WsReport } from './ws-driver.js';
import { ceilingFigures, sweepFigures, type RunFigures } from './latency-figures.js';
import {
  LATENCY_DEFAULTS,
  LATENCY_MODERATE_DEFAULTS,
  type LatencyOptions,
} from './latency-options.js';
import { PostingPace } from './posting-pace.js';
import { clockOffset, mergeReports } from './ws-report.js';

export function benchLatencyModerate(partial: Partial<LatencyOptions> = {}) {
  return benchLatency({ ...LATENCY_MODERATE_DEFAULTS, ...partial });
}

/**
 * bench.md "latency": `bubble gateway`, `bubble server` and `bubble core` children on one
 * redis-server, 10k WebSocket clients (in driver processes) authenticated with JWTs, posts at
 * 1,000/s through POST /v1/posts; for every ingest call and every client whose feed count it
 * changes (known from the follow graph), the time from the call's answer to the badge frame
 * that shows the new count at that client.
 */
export async function benchLatency(partial: Partial<LatencyOptions> = {}) {
  const options = { ...LATENCY_DEFAULTS, ...partial };
  const { log } = options;
  const now = Date.now();
  const scenario = options.activity === 'independent' ? 'latency-moderate' : 'latency';
  const stamp = `${now}-${scenario}`;
  // Posts and read cursors stay 2 h clear of the lookback's edge: no count goes down by a post
  // leaving the window during the run, so every change a client sees is a live post.
  const workload = buildScenarioWorkload('latency', options, {
    now,
    lookbackMs: 7 * DAY_MS - 2 * HOUR_MS,
    activity: options.activity,
  });
  const redis = await startBenchRedis(options);
  const { store, service, admin } = redis;
  const dir = await mkdtemp(path.join(tmpdir(), 'bubble-latency-'));
  const children: RoleProcess[] = [];
  const drivers: DriverHandle[] = [];
  let poster: RawHttpConnection | undefined;
  let figures: Record<string, unknown>;
  try {
    const seeded = await seedStore(store, service, workload, log, 'latency');
    const secrets = benchSecrets();
    const env = {
      ...roleEnv(redis.url, options.pools),
      BUBBLE_TICK: String(options.tickMs),
      BUBBLE_FOLLOW_CAP: String(options.followCap),
    };
    children.push(
      await spawnRole({
        role: 'server',
        env,
        nodeArgs: await cpuProfileArgs(options.profileDir, `${stamp}-server`),
        log,
      }),
    );
    const { core, probe } = await spawnProbedCore({
      dir,
      env,
      nodeArgs: await cpuProfileArgs(options.profileDir, `${stamp}-core`),
      children,
      log,
    });
    const gateway = await startGateway({
      redisUrl: redis.url,
      pools: options.pools,
      secrets,
      nodeArgs: await cpuProfileArgs(options.profileDir, `${stamp}-gateway`),
      log,
    });
    children.push(gateway);
    await probe.holdsPools(options.pools, log);
    log(`latency: the core holds every pool; ${options.users} clients connect`);

    const rssBefore = await processRssBytes(gateway.pid);
    const connected = await connectClients(options, workload, gateway, secrets.jwtSecret, drivers);
    const held = await coreHolds(probe, connected, log);
    await probe.skip(5, 60);
    const offsets = await Promise.all(drivers.map((d) => clockOffset(d)));
    log(
      `latency: the core holds ${held} of ${connected} users; clock offsets of the drivers ` +
        `${offsets.map((o) => `${o.offsetMs.toFixed(3)} ms (rtt ${o.rttMs.toFixed(2)})`).join(', ')}`,
    );

    poster = await RawHttpConnection.connect('127.0.0.1', gateway.port);
    const run = await postAndMeasure(options, workload, poster, secrets.apiKey, drivers, offsets, {
      probe,
      pids: {
        gateway: gateway.pid,
        core: core.pid,
        server: children[0]!.pid,
        ...Object.fromEntries(drivers.map((d, i) => [`driver${i}`, d.pid])),
        bench: process.pid,
      },
      admin,
      gatewayUrl: gateway.url,
    });
    const rssAfter = await processRssBytes(gateway.pid);
    const reports = await Promise.all(drivers.map((d) => d.call<WsReport>('report')));
    const merged = mergeReports(reports);
    const stuck = reports.flatMap((r) => r.stuckUsers).slice(0, 20);
    // Are the users whose pushes never came online at all (presence) as far as Redis knows?
    const stuckOnline = await Promise.all(
      stuck.map(async (user) => {
        const key = `${KEY_PREFIX}:{p:${poolOf(user, options.pools)}}:online`;
        return (await admin.zscore(key, user)) !== null;
      }),
    );
    const sweeps = sweepFigures(run.sweeps);
    // The ceiling on the same drivers, once the bubble children are gone (they would take CPU).
    for (const driver of drivers) await driver.call('close').catch(() => {});
    await stopAll(children.splice(0));
    await Promise.all(drivers.map((d) => d.call('reset')));
    let ceiling: CeilingFigures | undefined;
    if (options.ceiling) {
      log(`${scenario}: the bubble phase is over; the bare ws ceiling with the same drivers`);
      ceiling = await measureCeiling(drivers, {
        ...WS_CEILING_DEFAULTS,
        clients: connected,
        perAddress: options.perAddress,
        warmupSeconds: options.ceilingWarmupSeconds,
        seconds: options.ceilingSeconds,
        // The same writes at the gateway's rate and in its sweeps' rhythm.
        pace: {
          framesPerSec: merged.frames / Math.max(0.001, merged.seconds),
          tickMs: options.tickMs,
        },
        log,
      });
    }
    figures = {
      scenario,
      users: options.users,
      connected,
      usersHeldByCore: held,
      activity: options.activity,
      pools: options.pools,
      postsPerSecTarget: options.postsPerSec,
      postsPerSec: run.postsPerSec,
      ingestCalls: run.calls,
      pushP50Ms: merged.p50Ms,
      pushP90Ms: merged.p90Ms,
      pushP99Ms: merged.p99Ms,
      pushMaxMs: merged.maxMs,
      quietPushP50Ms: merged.quietP50Ms,
      quietPushP99Ms: merged.quietP99Ms,
      quietSamples: merged.quietSamples,
      pushesPerSec: Math.round(merged.frames / Math.max(0.001, merged.seconds)),
      ...(ceiling ? ceilingFigures(options, merged, run, sweeps, ceiling) : {}),
      gatewayRssBytesPerConn:
        rssBefore === null || rssAfter === null
          ? null
          : Math.round((rssAfter - rssBefore) / connected),
      samples: merged.samples,
      samplesPerCall: Math.round(merged.samples / Math.max(1, run.measuredCalls)),
      undelivered: merged.undelivered,
      usersWithUndelivered: stuck,
      usersWithUndeliveredOnline: stuckOnline.filter(Boolean).length,
      beforeAnswer: merged.beforeAnswer,
      countDecreases: merged.decreases,
      closes: merged.closes,
      ingestAnswerP50Ms: run.answerP50Ms,
      ingestAnswerP99Ms: run.answerP99Ms,
      gatewayPushQueue: run.pushQueue,
      ...sweeps,
      cpuCores: run.cpu,
      driverLag: reports.map((r) => r.lag),
      benchLag: run.benchLag,
      clockOffsetsMs: offsets.map((o) => round2(o.offsetMs)),
      meanFollows: round2(seeded.edges / options.users),
      windowPosts: options.windowPosts,
      seedSeconds: round2(seeded.seconds),
      measuredSeconds: round2(merged.seconds),
      ceiling,
      machine: machineFacts(),
    };
  } finally {
    poster?.close();
    if (!options.sharedDrivers) await Promise.all(drivers.map((d) => d.stop().catch(() => {})));
    await stopAll(children);
    await redis.stop();
    await rm(dir, { recursive: true, force: true });
  }
  if (options.profileDir) figures.profiles = await logProfiles(options.profileDir, stamp, log);
  return figures;
}

/** Forks the drivers and opens every client; resolves with how many are connected. */
async function connectClients(
  options: LatencyOptions,
  workload: Workload,
  gateway: RoleProcess,
  jwtSecret: string,
  drivers: DriverHandle[],
): Promise<number> {
  const n = workload.users.length;
  const per = Math.ceil(n / options.drivers);
  const started = performance.now();
  const results = await Promise.all(
    Array.from({ length: options.drivers }, (_, d) => {
      const driver =
        options.sharedDrivers?.[d] ??
        forkDriver(new URL('./ws-driver.js', import.meta.url), `driver${d}`, options.log);
      drivers.push(driver);
      const from = d * per;
      const to = Math.min(n, from + per);
      return driver.call<WsConnectResult>('connect', {
        url: `ws://127.0.0.1:${gateway.port}/v1/ws`,
        users: workload.users.slice(from, to),
        firstIndex: from,
        perAddress: options.perAddress,
        jwtSecret,
        concurrency: Math.ceil(options.connectConcurrency / options.drivers),
        seconds: options.connectSeconds,
        follows: workload.follows.slice(from, to),
        authors: workload.authors.length,
      });
    }),
  );
  const connected = results.reduce((sum, r) => sum + r.connected, 0);
  const retries = results.reduce((sum, r) => sum + r.retries, 0);
  const errors: Record<string, number> = {};
  for (const r of results) {
    for (const [e, c] of Object.entries(r.errors)) errors[e] = (errors[e] ?? 0) + c;
  }
  options.log(
    `latency: ${connected} of ${n} clients connected in ` +
      `${((performance.now() - started) / 1000).toFixed(1)} s (${retries} attempts retried)` +
      (Object.keys(errors).length > 0 ? `; failures ${JSON.stringify(errors)}` : ''),
  );
  if (connected < n * 0.99) throw new Error(`only ${connected} of ${n} clients connected`);
  return connected;
}

/**
 * Waits for the core to hold every connected user (minutes on a loaded machine); after 120 s
 * settles for 99 % of them (a user the core does not hold gets no pushes: its awaited pushes
 * show up as `undelivered`).
 */
async function coreHolds(probe: ProbeReader, users: number, log: (line: string) => void) {
  const describe = (r: ProbeRecord) => `core holds ${r.report.users} of ${users} online users`;
  try {
    return (await probe.waitFor((r) => r.report.users >= users, 120, describe, log)).report.users;
  } catch {
    const last = await probe.waitFor((r) => r.report.users >= users * 0.99, 30, describe, log);
    log(`latency: ${describe(last)} after 120 s; going on`);
    return last.report.users;
  }
}

/**
 * Posts through POST /v1/posts, one call at a time (so the posts reach the post log in the
 * order they are announced), every 1/callsPerSec s; warm-up, then the measured stretch, then
 * time for the last pushes to arrive.
 */
async function postAndMeasure(
  options: LatencyOptions,
  workload: Workload,
  poster: RawHttpConnection,
  apiKey: string,
  drivers: DriverHandle[],
  offsets: { offsetMs: number }[],
  probes: { probe: ProbeReader; pids: Record<string, number>; admin: Redis; gatewayUrl: string },
): Promise<RunFigures> {
  const { log } = options;
  const pace = new PostingPace(options);
  let measuring = false;
  let calls = 0;
  let measuredCalls = 0;
  let measuredPosts = 0;
  let seq = 0;
  let failures = 0;
  const answers: number[] = [];
  const lag = new LoopLag();
  let cpuBefore: Awaited<ReturnType<typeof cpuSnapshot>> | undefined;
  let kernelBefore: number | null = null;
  let switchesBefore: Awaited<ReturnType<typeof processContextSwitches>> = null;
  let redisBefore = 0;
  let pushBefore: PushSnapshot | undefined;
  let lastLog = pace.started;
  log(
    `latency: posting ${options.postsPerSec}/s in ${options.callsPerSec} calls/s; ` +
      `${options.warmupSeconds} s warm-up, then ${options.seconds} s measured`,
  );
  while (pace.running()) {
    const callAt = performance.now();
    if (!measuring && callAt >= pace.measureFrom) {
      measuring = true;
      await Promise.all(drivers.map((d) => d.call('measure', { on: true })));
      await probes.probe.drain();
      cpuBefore = await cpuSnapshot(probes.pids);
      kernelBefore = (await processCpuTimes(probes.pids.gateway!))?.system ?? null;
      switchesBefore = await processContextSwitches(probes.pids.gateway!);
      redisBefore = await redisCpuSeconds(probes.admin);
      pushBefore = await readPushMetrics(probes.gatewayUrl);
      lag.start();
    }
    const n = pace.owed(callAt);
    if (n > 0) {
      const ts = Date.now();
      const authors = new Int32Array(n);
      const posts = Array.from({ length: n }, (_, i) => {
        const a = workload.nextPoster();
        authors[i] = a;
        return { author: workload.authors[a]!, id: `l${seq++}`, ts };
      });
      const body = JSON.stringify({ posts });
      const callStarted = wallNow();
      const response = await poster.request(
        httpRequest('POST', '/v1/posts', { 'X-Api-Key': apiKey }, body),
      );
      const answerAt = wallNow();
      calls++;
      const accepted = response.status === 202 ? acceptedOf(response.body) : -1;
      if (accepted !== n && ++failures <= 3) {
        log(
          `latency: ingest answered ${response.status} ${response.body.toString().slice(0, 200)}`,
        );
      }
      if (measuring) {
        measuredCalls++;
        measuredPosts += n;
        answers.push(answerAt - callStarted);
      }
      drivers.forEach((d, i) =>
        d.post('batch', {
          answerAt: answerAt + offsets[i]!.offsetMs,
          authors,
          measure: measuring,
        } satisfies WsBatch),
      );
    }
    if (performance.now() - lastLog > 10_000) {
      lastLog = performance.now();
      const pending = await Promise.all(drivers.map((d) => d.call<number>('pending')));
      log(
        `latency: ${pace.sent} posts in ${calls} calls; ${measuring ? 'measuring' : 'warming up'}; ` +
          `pushes awaited ${pending.reduce((a, b) => a + b, 0)}`,
      );
    }
    await pace.untilNextCall(callAt);
  }
  const measuredSeconds = (performance.now() - pace.measureFrom) / 1000;
  const benchLag = lag.stop();
  const cpuAfter = await cpuSnapshot(probes.pids);
  const kernelAfter = (await processCpuTimes(probes.pids.gateway!))?.system ?? null;
  const switchesAfter = await processContextSwitches(probes.pids.gateway!);
  const redisCpu = (await redisCpuSeconds(probes.admin)) - redisBefore;
  const cpu = cpuBefore ? cpuShares(cpuBefore, cpuAfter) : {};
  cpu['redis-server'] = round2(redisCpu / measuredSeconds);
  const pushAfter = await readPushMetrics(probes.gatewayUrl);
  await Promise.all(drivers.map((d) => d.call('measure', { on: false })));
  const sweeps = await probes.probe.drain();
  // The last calls' pushes may still be on their way.
  const drainUntil = performance.now() + options.drainSeconds * 1000;
  for (;;) {
    const pending = await Promise.all(drivers.map((d) => d.call<number>('pending')));
    if (pending.every((p) => p === 0) || performance.now() > drainUntil) break;
    await sleep(100);
  }
  answers.sort((a, b) => a - b);
  return {
    calls,
    measuredCalls,
    postsPerSec: Math.round(measuredPosts / measuredSeconds),
    answerP50Ms: round2(percentile(answers, 50)),
    answerP99Ms: round2(percentile(answers, 99)),
    sweeps,
    cpu,
    gatewayKernelCores:
      kernelBefore === null || kernelAfter === null
        ? null
        : round2((kernelAfter - kernelBefore) / measuredSeconds),
    gatewayInvoluntarySwitches:
      switchesBefore && switchesAfter
        ? switchesAfter.involuntary - switchesBefore.involuntary
        : null,
    benchLag,
    pushQueue: pushBefore ? pushFigures(pushBefore, pushAfter) : null,
  };
}

function acceptedOf(body: Buffer): number {
  try {
    return (JSON.parse(body.toString()) as { accepted: number }).accepted;
  } catch {
    return -1;
  }
}
