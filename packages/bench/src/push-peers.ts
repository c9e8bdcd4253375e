/**
 * bench.md "push-peers": the same clients (the same ws-driver processes) and the same stream of
 * badge changes pushed by (a) `bubble gateway` with server and core, as `latency` runs it, (b) a
 * Socket.IO 4 server with `@socket.io/redis-adapter`, one room per user, and (c) a bare `ws`
 * server. (b) and (c) read the changes from their own redis-server: a feeder here applies the
 * very posts `latency` sends (same seed, same draw) to every follower's count and publishes the
 * changed badges once a tick (BUBBLE_TICK), as a core's sweep does. Latency is timed as in
 * `latency`, from the moment the posts are handed over to the frame at the client.
 */
import { DAY_MS, HOUR_MS } from '@bubble/protocol';
import { startRedisServer } from '@bubble/test-utils';
import { Redis } from 'ioredis';
import { processCpuSeconds, processRssBytes } from './children.js';
import { forkDriver, type DriverHandle } from './driver-process.js';
import { wallNow } from './identity.js';
import { benchLatency } from './latency.js';
import { LATENCY_DEFAULTS, type LatencyOptions } from './latency-options.js';
import { PostingPace } from './posting-pace.js';
import { machineFacts, round2, sleep } from './live-stack.js';
import { PEER_CHANGES_CHANNEL, peerBadge, type PeerKind } from './push-peer-server.js';
import { buildScenarioWorkload, type Workload } from './workload.js';
import type { WsBatch, WsConnectResult, WsReport } from './ws-driver.js';
import { clockOffset, mergeReports } from './ws-report.js';

export type PushPeersOptions = LatencyOptions;

export const PUSH_PEERS_DEFAULTS: PushPeersOptions = {
  ...LATENCY_DEFAULTS,
  warmupSeconds: 5,
  seconds: 30,
  ceiling: false,
};

interface PeerFigures {
  framesPerSec: number;
  pushP50Ms: number;
  pushP99Ms: number;
  rssBytesPerConn: number | null;
  serverCpuCores: number | null;
  undelivered: number;
}

export async function benchPushPeers(partial: Partial<PushPeersOptions> = {}) {
  const options = { ...PUSH_PEERS_DEFAULTS, ...partial };
  const { log } = options;
  const drivers = Array.from({ length: options.drivers }, (_, d) =>
    forkDriver(new URL('./ws-driver.js', import.meta.url), `driver${d}`, log),
  );
  try {
    log('push-peers: (a) bubble gateway, server and core');
    const latency = await benchLatency({ ...options, ceiling: false, sharedDrivers: drivers });
    const bubble: PeerFigures = {
      framesPerSec: latency.pushesPerSec as number,
      pushP50Ms: latency.pushP50Ms as number,
      pushP99Ms: latency.pushP99Ms as number,
      rssBytesPerConn: latency.gatewayRssBytesPerConn as number | null,
      serverCpuCores: (latency.cpuCores as Record<string, number | null>).gateway ?? null,
      undelivered: latency.undelivered as number,
    };
    const peers: Partial<Record<PeerKind, PeerFigures>> = {};
    for (const kind of ['socketio', 'ws'] as const) {
      await Promise.all(drivers.map((d) => d.call('reset')));
      log(`push-peers: (${kind === 'socketio' ? 'b' : 'c'}) ${kind}`);
      peers[kind] = await peerPhase(kind, options, drivers);
    }
    const socketio = peers.socketio!;
    const ws = peers.ws!;
    return {
      scenario: 'push-peers',
      users: options.users,
      activity: options.activity,
      tickMs: options.tickMs,
      postsPerSec: options.postsPerSec,
      bubble,
      socketio,
      ws,
      bubbleOverSocketioFrames: round2(bubble.framesPerSec / socketio.framesPerSec),
      bubbleOverWsFrames: round2(bubble.framesPerSec / ws.framesPerSec),
      barMet:
        bubble.framesPerSec > socketio.framesPerSec &&
        bubble.pushP99Ms < socketio.pushP99Ms &&
        bubble.framesPerSec >= 0.8 * ws.framesPerSec,
      bubblePhase: {
        sweepP99Ms: latency.sweepP99Ms,
        gatewayPushQueue: latency.gatewayPushQueue,
        cpuCores: latency.cpuCores,
      },
      ...machineFacts(),
    };
  } finally {
    await Promise.all(drivers.map((d) => d.stop().catch(() => {})));
  }
}

/** One peer server on its own redis-server, fed the posts of a `latency` run as badge changes. */
async function peerPhase(
  kind: PeerKind,
  options: PushPeersOptions,
  drivers: DriverHandle[],
): Promise<PeerFigures> {
  const { log } = options;
  const workload = buildScenarioWorkload(`push-peers ${kind}`, options, {
    now: Date.now(),
    lookbackMs: 7 * DAY_MS - 2 * HOUR_MS,
    activity: options.activity,
  });
  const redis = await startRedisServer();
  const server = forkDriver(
    new URL('./push-peer-server.js', import.meta.url),
    `${kind}-server`,
    log,
  );
  const publisher = new Redis(redis.url);
  try {
    const port = await server.call<number>('listen', { kind, redisUrl: redis.url });
    const rssBefore = await processRssBytes(server.pid);
    const n = workload.users.length;
    const per = Math.ceil(n / drivers.length);
    const connects = await Promise.all(
      drivers.map((driver, d) => {
        const from = d * per;
        const to = Math.min(n, from + per);
        return driver.call<WsConnectResult>('connect', {
          url: `ws://127.0.0.1:${port}`,
          users: workload.users.slice(from, to),
          firstIndex: from,
          perAddress: options.perAddress,
          jwtSecret: 'push-peers',
          concurrency: Math.ceil(options.connectConcurrency / drivers.length),
          seconds: options.connectSeconds,
          follows: workload.follows.slice(from, to),
          authors: workload.authors.length,
          peer: kind,
        });
      }),
    );
    const connected = connects.reduce((sum, r) => sum + r.connected, 0);
    log(`push-peers ${kind}: ${connected} of ${n} clients connected`);
    if (connected < n * 0.99) throw new Error(`only ${connected} of ${n} clients connected`);
    const offsets = await Promise.all(drivers.map((d) => clockOffset(d)));
    const cpu = await feedAndMeasure(options, workload, publisher, drivers, offsets, server.pid);
    const rssAfter = await processRssBytes(server.pid);
    const merged = mergeReports(await Promise.all(drivers.map((d) => d.call<WsReport>('report'))));
    for (const driver of drivers) await driver.call('close').catch(() => {});
    return {
      framesPerSec: Math.round(merged.frames / Math.max(0.001, merged.seconds)),
      pushP50Ms: merged.p50Ms,
      pushP99Ms: merged.p99Ms,
      rssBytesPerConn:
        rssBefore === null || rssAfter === null
          ? null
          : Math.round((rssAfter - rssBefore) / connected),
      serverCpuCores: cpu,
      undelivered: merged.undelivered,
    };
  } finally {
    publisher.disconnect();
    await server.stop().catch(() => {});
    await redis.stop();
  }
}

/**
 * `latency`'s posting loop with the feeder in place of the ingest call: the posts of a call
 * raise their authors' followers' counts at once (the call's "answer"), and every tick the
 * changed badges are published in one message. Resolves with the server's CPU share.
 */
async function feedAndMeasure(
  options: PushPeersOptions,
  workload: Workload,
  publisher: Redis,
  drivers: DriverHandle[],
  offsets: { offsetMs: number }[],
  serverPid: number,
): Promise<number | null> {
  const users = workload.users.length;
  const authors = workload.authors.length;
  const start = new Int32Array(authors + 1);
  for (const list of workload.follows) for (const a of list) start[a + 1]!++;
  for (let a = 0; a < authors; a++) start[a + 1]! += start[a]!;
  const followers = new Int32Array(start[authors]!);
  const fill = start.slice(0, authors);
  workload.follows.forEach((list, u) => {
    for (const a of list) followers[fill[a]!++] = u;
  });
  const counts = new Int32Array(users);
  const versions = new Int32Array(users);
  const dirty = new Uint8Array(users);
  let changed: number[] = [];
  const publishChanged = () => {
    if (changed.length === 0) return;
    const badges = changed.map((u) => {
      dirty[u] = 0;
      return peerBadge(workload.users[u]!, counts[u]!, ++versions[u]!);
    });
    changed = [];
    void publisher.publish(PEER_CHANGES_CHANNEL, JSON.stringify(badges));
  };
  const tick = setInterval(publishChanged, options.tickMs);

  const pace = new PostingPace(options);
  let measuring = false;
  let cpuBefore: number | null = null;
  try {
    while (pace.running()) {
      const callAt = performance.now();
      if (!measuring && callAt >= pace.measureFrom) {
        measuring = true;
        await Promise.all(drivers.map((d) => d.call('measure', { on: true })));
        cpuBefore = await processCpuSeconds(serverPid);
      }
      const n = pace.owed(callAt);
      if (n > 0) {
        const posted = new Int32Array(n);
        for (let i = 0; i < n; i++) {
          const a = workload.nextPoster();
          posted[i] = a;
          for (let k = start[a]!; k < start[a + 1]!; k++) {
            const u = followers[k]!;
            counts[u]!++;
            if (dirty[u] === 0) {
              dirty[u] = 1;
              changed.push(u);
            }
          }
        }
        const answerAt = wallNow();
        drivers.forEach((d, i) =>
          d.post('batch', {
            answerAt: answerAt + offsets[i]!.offsetMs,
            authors: posted,
            measure: measuring,
          } satisfies WsBatch),
        );
      }
      await pace.untilNextCall(callAt);
    }
  } finally {
    clearInterval(tick);
    publishChanged();
  }
  const measuredSeconds = (performance.now() - pace.measureFrom) / 1000;
  const cpuAfter = await processCpuSeconds(serverPid);
  await Promise.all(drivers.map((d) => d.call('measure', { on: false })));
  const drainUntil = performance.now() + options.drainSeconds * 1000;
  for (;;) {
    const pending = await Promise.all(drivers.map((d) => d.call<number>('pending')));
    if (pending.every((p) => p === 0) || performance.now() > drainUntil) break;
    await sleep(100);
  }
  return cpuBefore === null || cpuAfter === null
    ? null
    : round2((cpuAfter - cpuBefore) / measuredSeconds);
}
