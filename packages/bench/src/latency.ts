import { mkdtemp, rm } from 'node:fs/promises';
import os, { tmpdir } from 'node:os';
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
import {
  buildScenarioWorkload,
  percentile,
  type Workload,
  type ScenarioWorkloadOptions,
} from './workload.js';
import { measureCeiling, WS_CEILING_DEFAULTS, type CeilingFigures } from './ws-ceiling.js';
import type { WsBatch, WsConnectResult, WsReport } from './ws-driver.js';

export interface LatencyOptions extends ScenarioWorkloadOptions {
  pools: number;
  /** BUBBLE_TICK of the server and core children, ms. */
  tickMs: number;
  postsPerSec: number;
  /** Ingest calls per second (the posts of a second are split over them). */
  callsPerSec: number;
  warmupSeconds: number;
  seconds: number;
  /** Time allowed after the last measured call for its pushes to arrive. */
  drainSeconds: number;
  /** Driver processes the clients are spread over. */
  drivers: number;
  /** Clients per local source address (the gateway limits new connections per address). */
  perAddress: number;
  connectConcurrency: number;
  connectSeconds: number;
  /** Who posts (WorkloadOptions.activity); `popularity` is the figure of the table. */
  activity: 'popularity' | 'independent';
  /** Write CPU profiles of the gateway, core and server children here. */
  profileDir: string | undefined;
  /** The bare `ws` ceiling measured after the bubble phase, with the same drivers. */
  ceilingWarmupSeconds: number;
  ceilingSeconds: number;
  /** Off for push-peers, which measures bare `ws` its own way. */
  ceiling: boolean;
  /** ws-driver processes of the caller's to use (and leave running) instead of forking new ones. */
  sharedDrivers: DriverHandle[] | undefined;
}

export const LATENCY_DEFAULTS: LatencyOptions = {
  users: 10_000,
  authors: 50_000,
  windowPosts: 200_000,
  followMedian: 150,
  followCap: 2000,
  pools: 100,
  tickMs: 100,
  postsPerSec: 1000,
  callsPerSec: 10,
  warmupSeconds: 10,
  seconds: 60,
  drainSeconds: 10,
  drivers: 2,
  perAddress: 40,
  connectConcurrency: 100,
  // Opening 10k sockets takes minutes on a loaded 2-core machine.
  connectSeconds: 480,
  seed: 11,
  activity: 'popularity',
  profileDir: undefined,
  ceilingWarmupSeconds: WS_CEILING_DEFAULTS.warmupSeconds,
  ceilingSeconds: WS_CEILING_DEFAULTS.seconds,
  ceiling: true,
  sharedDrivers: undefined,
  log: () => {},
};

/** bench.md "latency-moderate": who posts is drawn independently of who is followed. */
export const LATENCY_MODERATE_DEFAULTS: LatencyOptions = {
  ...LATENCY_DEFAULTS,
  activity: 'independent',
};

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

/** The driver's clock minus ours, from the exchange with the shortest round trip. */
export async function clockOffset(
  driver: DriverHandle,
): Promise<{ offsetMs: number; rttMs: number }> {
  let best = { offsetMs: 0, rttMs: Infinity };
  for (let i = 0; i < 20; i++) {
    const sent = wallNow();
    const theirs = await driver.call<number>('clock');
    const back = wallNow();
    if (back - sent < best.rttMs)
      best = { offsetMs: theirs - (sent + back) / 2, rttMs: back - sent };
  }
  return best;
}

interface RunFigures {
  calls: number;
  measuredCalls: number;
  postsPerSec: number;
  answerP50Ms: number;
  answerP99Ms: number;
  sweeps: ProbeRecord[];
  cpu: Record<string, number | null>;
  /** Of the gateway's CPU, the cores spent in the kernel (its socket writes and reads). */
  gatewayKernelCores: number | null;
  /** Times the gateway was descheduled while it could run, over the measured stretch. */
  gatewayInvoluntarySwitches: number | null;
  benchLag: { p50Ms: number; p99Ms: number; maxMs: number };
  /** The gateway's own push-queue metrics over the measured stretch. */
  pushQueue: ReturnType<typeof pushFigures> | null;
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
  const period = 1000 / options.callsPerSec;
  const started = performance.now();
  const measureFrom = started + options.warmupSeconds * 1000;
  const measureTo = measureFrom + options.seconds * 1000;
  let measuring = false;
  let sent = 0;
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
  let lastLog = started;
  log(
    `latency: posting ${options.postsPerSec}/s in ${options.callsPerSec} calls/s; ` +
      `${options.warmupSeconds} s warm-up, then ${options.seconds} s measured`,
  );
  while (performance.now() < measureTo) {
    const callAt = performance.now();
    if (!measuring && callAt >= measureFrom) {
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
    const due = Math.floor(((callAt - started) / 1000) * options.postsPerSec);
    const n = Math.min(Math.max(0, due - sent), options.postsPerSec);
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
      sent += n;
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
        `latency: ${sent} posts in ${calls} calls; ${measuring ? 'measuring' : 'warming up'}; ` +
          `pushes awaited ${pending.reduce((a, b) => a + b, 0)}`,
      );
    }
    await sleep(Math.max(0, callAt + period - performance.now()));
  }
  const measuredSeconds = (performance.now() - measureFrom) / 1000;
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

/**
 * bench.md's bars for `latency` beside the figures they are made of: CPU per frame against the
 * bare sender, p99 against what the machine needs (tick + sweep p99 + one frame to every user
 * at the ceiling's rate), and for `latency-moderate` the demand as a share of the ceiling.
 */
function ceilingFigures(
  options: LatencyOptions,
  merged: ReturnType<typeof mergeReports>,
  run: RunFigures,
  sweeps: ReturnType<typeof sweepFigures>,
  ceiling: CeilingFigures,
) {
  const gatewayFramesPerSec = merged.frames / Math.max(0.001, merged.seconds);
  const gatewayCores = run.cpu.gateway ?? null;
  const gatewayCpuUsPerFrame =
    gatewayCores === null || gatewayFramesPerSec === 0
      ? null
      : round2((gatewayCores / gatewayFramesPerSec) * 1e6);
  const minRoundMs = round2((options.users / ceiling.framesPerSec) * 1000);
  const latencyBarMs = round2(1.25 * (options.tickMs + sweeps.sweepP99Ms + minRoundMs));
  const gatewayKernelUsPerFrame =
    run.gatewayKernelCores === null || gatewayFramesPerSec === 0
      ? null
      : round2((run.gatewayKernelCores / gatewayFramesPerSec) * 1e6);
  const cpuPerFrameRatio =
    gatewayCpuUsPerFrame === null
      ? null
      : round2(gatewayCpuUsPerFrame / ceiling.senderCpuUsPerFrame);
  // Frames needed: one per routed change, had the gateway conflated none away.
  const neededPerSec = run.pushQueue ? run.pushQueue.routed / Math.max(0.001, merged.seconds) : 0;
  return {
    gatewayFramesPerSec: Math.round(gatewayFramesPerSec),
    ceilingFramesPerSec: ceiling.framesPerSec,
    ceilingRatio: round2(gatewayFramesPerSec / ceiling.framesPerSec),
    gatewayCpuUsPerFrame,
    ceilingSenderCpuUsPerFrame: ceiling.senderCpuUsPerFrame,
    cpuPerFrameRatio,
    // Of each figure above, the part spent in the kernel: the socket writes a frame needs.
    gatewayKernelUsPerFrame,
    ceilingSenderKernelUsPerFrame: ceiling.senderKernelUsPerFrame,
    // How often each was descheduled while it could run, per 1,000 frames it sent.
    gatewayInvoluntarySwitchesPerKFrames:
      run.gatewayInvoluntarySwitches === null || merged.frames === 0
        ? null
        : round2((run.gatewayInvoluntarySwitches / merged.frames) * 1000),
    ceilingSenderInvoluntarySwitchesPerKFrames: ceiling.senderInvoluntarySwitchesPerKFrames,
    // The bare sender paced to the gateway's frames/s in bursts a tick apart: not the bar's
    // yardstick, which is the ceiling above; what the same writes cost at the gateway's rate.
    ...(ceiling.paced && {
      pacedSenderCpuUsPerFrame: ceiling.paced.senderCpuUsPerFrame,
      pacedSenderKernelUsPerFrame: ceiling.paced.senderKernelUsPerFrame,
      pacedSenderFramesPerSec: ceiling.paced.framesPerSec,
      pacedCpuPerFrameRatio:
        gatewayCpuUsPerFrame === null
          ? null
          : round2(gatewayCpuUsPerFrame / ceiling.paced.senderCpuUsPerFrame),
    }),
    cpuPerFrameBarMet: cpuPerFrameRatio !== null && cpuPerFrameRatio <= 1.5,
    tickMs: options.tickMs,
    minRoundMs,
    latencyBar: `1.25 × (${options.tickMs} + ${sweeps.sweepP99Ms} + ${minRoundMs}) = ${latencyBarMs} ms against pushP99Ms ${merged.p99Ms}`,
    latencyBarMs,
    latencyBarMet: merged.p99Ms <= latencyBarMs,
    framesNeededPerSec: Math.round(neededPerSec),
    demandRatio: round2(neededPerSec / ceiling.framesPerSec),
    moderateBarMet: merged.p99Ms <= 250,
  };
}

/** The p-th percentile of a histogram of 0.1 ms buckets holding `samples` samples. */
function histogramPercentile(histogram: Float64Array, samples: number, p: number): number {
  const rank = Math.max(1, Math.ceil((p / 100) * samples));
  let seen = 0;
  for (let i = 0; i < histogram.length; i++) {
    seen += histogram[i]!;
    if (seen >= rank) return round2(i / 10);
  }
  return 0;
}

export function mergeReports(reports: WsReport[]) {
  const histogram = new Float64Array(reports[0]?.histogram.length ?? 1);
  const quietHistogram = new Float64Array(histogram.length);
  let samples = 0;
  let quietSamples = 0;
  for (const r of reports) {
    r.histogram.forEach((count, i) => (histogram[i]! += count));
    r.quietHistogram.forEach((count, i) => (quietHistogram[i]! += count));
    samples += r.samples;
    quietSamples += r.quietSamples;
  }
  const at = (p: number) => histogramPercentile(histogram, samples, p);
  const quietAt = (p: number) => histogramPercentile(quietHistogram, quietSamples, p);
  let max = 0;
  histogram.forEach((count, i) => {
    if (count > 0) max = i;
  });
  const closes: Record<string, number> = {};
  for (const r of reports) {
    for (const [code, n] of Object.entries(r.closes)) closes[code] = (closes[code] ?? 0) + n;
  }
  const sum = (f: (r: WsReport) => number) => reports.reduce((total, r) => total + f(r), 0);
  return {
    samples,
    quietSamples,
    quietP50Ms: quietAt(50),
    quietP99Ms: quietAt(99),
    p50Ms: at(50),
    p90Ms: at(90),
    p99Ms: at(99),
    maxMs: round2(max / 10),
    frames: sum((r) => r.framesMeasured),
    seconds: sum((r) => r.measuredSeconds) / Math.max(1, reports.length),
    undelivered: sum((r) => r.undelivered),
    beforeAnswer: sum((r) => r.beforeAnswer),
    decreases: sum((r) => r.decreases),
    closes,
  };
}

/** The core's sweeps during the measured stretch, from its probe. */
function sweepFigures(records: ProbeRecord[]) {
  const durations = records.map((r) => r.report.durationMs).sort((a, b) => a - b);
  const intervals = records
    .slice(1)
    .map((r, i) => r.report.at - records[i]!.report.at)
    .sort((a, b) => a - b);
  const changed = records.map((r) => r.report.changed).sort((a, b) => a - b);
  const repaired =
    records.length > 0
      ? records.at(-1)!.report.driftRepaired - records[0]!.report.driftRepaired
      : 0;
  return {
    sweeps: records.length,
    sweepP50Ms: percentile(durations, 50),
    sweepP99Ms: percentile(durations, 99),
    sweepIntervalP50Ms: percentile(intervals, 50),
    sweepIntervalP99Ms: percentile(intervals, 99),
    changedPerSweep: percentile(changed, 50),
    sweepRedisCmdsP50: percentile(
      records.map((r) => r.commands).sort((a, b) => a - b),
      50,
    ),
    driftRepairedInRun: repaired,
    // BUBBLE_BENCH_NO_RECONCILE=1 (passed on to the core) turns it off, for diagnosis only.
    reconciliation: process.env.BUBBLE_BENCH_NO_RECONCILE === '1' ? 'off (diagnostic)' : 'on',
    loadAverage1m: round2(os.loadavg()[0]!),
  };
}
