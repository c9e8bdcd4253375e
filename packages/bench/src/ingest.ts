import type { RoleProcess } from '@bubble/test-utils';
import type { AuthorSizes, BenchOptions } from './bench-options.js';
import { startBenchRedis } from './bench-redis.js';
import { RawHttpConnection } from './http-client.js';
import { postBatchesFor } from './post-batches.js';
import { logProfiles } from './profile-summary.js';
import {
  benchSecrets,
  cpuShares,
  cpuSnapshot,
  LoopLag,
  machineFacts,
  round2,
  startProfiledGateway,
  storePostsAndCursors,
} from './live-stack.js';
import { callsBetween, commandCalls, redisCpuSeconds, sum } from './redis-probe.js';
import { authorsWorkload, percentile } from './workload.js';

export interface IngestOptions extends AuthorSizes, BenchOptions {
  pools: number;
  /** Posts per POST /v1/posts call. */
  batch: number;
  /** Keep-alive connections, each with one call in flight. */
  connections: number;
  warmupSeconds: number;
  seconds: number;
  profileDir: string | undefined;
}

export const INGEST_DEFAULTS: IngestOptions = {
  authors: 50_000,
  windowPosts: 200_000,
  pools: 100,
  batch: 500,
  connections: 8,
  warmupSeconds: 3,
  seconds: 30,
  seed: 19,
  profileDir: undefined,
  log: () => {},
};

/**
 * bench.md "ingest": posts through `POST /v1/posts`, 500 per call, by authors drawn by
 * activity, stamped now, into one `bubble gateway` child on a redis-server whose authors already
 * hold a week of posts. `postsPerSec` counts the posts the answers accepted.
 */
export async function benchIngest(partial: Partial<IngestOptions> = {}) {
  const options = { ...INGEST_DEFAULTS, ...partial };
  const { log } = options;
  const stamp = `${Date.now()}-ingest`;
  const workload = authorsWorkload(options);
  const redis = await startBenchRedis(options);
  const { admin } = redis;
  let gateway: RoleProcess | undefined;
  const connections: RawHttpConnection[] = [];
  let figures: Record<string, unknown>;
  try {
    await storePostsAndCursors(redis.store, redis.service, workload);
    log(`ingest: ${workload.posts.length} posts of the last 7 days stored`);
    const secrets = benchSecrets();
    gateway = await startProfiledGateway(redis.url, secrets, options, stamp);
    for (let c = 0; c < options.connections; c++) {
      connections.push(await RawHttpConnection.connect('127.0.0.1', gateway.port));
    }
    let seq = 0;
    const nextPosts = () => {
      const ts = Date.now();
      return Array.from({ length: options.batch }, () => ({
        author: workload.authors[workload.authorRank.next()]!,
        id: `i${seq++}`,
        ts,
      }));
    };
    const phase = async (seconds: number) => {
      const lag = new LoopLag();
      lag.start();
      const posted = await postBatchesFor(
        connections,
        seconds,
        secrets.apiKey,
        options.batch,
        nextPosts,
      );
      return { ...posted, lag: lag.stop() };
    };
    log(`ingest: ${options.connections} connections, ${options.batch} posts per call; warm-up`);
    await phase(options.warmupSeconds);
    const pids = { gateway: gateway.pid, bench: process.pid };
    const cpuBefore = await cpuSnapshot(pids);
    const redisBefore = await redisCpuSeconds(admin);
    const callsBefore = await commandCalls(admin);
    const measured = await phase(options.seconds);
    const cpu = cpuShares(cpuBefore, await cpuSnapshot(pids));
    cpu['redis-server'] = round2(((await redisCpuSeconds(admin)) - redisBefore) / measured.elapsed);
    const calls = callsBetween(callsBefore, await commandCalls(admin));
    const postsPerSec = Math.round(measured.accepted / measured.elapsed);
    log(
      `ingest: ${postsPerSec} posts/s (${measured.accepted} accepted in ${measured.elapsed.toFixed(1)} s), ` +
        `calls p50 ${percentile(measured.times, 50).toFixed(1)} ms p99 ` +
        `${percentile(measured.times, 99).toFixed(1)} ms; CPU (cores) ${JSON.stringify(cpu)}`,
    );
    const perPost = (n: number) => round2(n / Math.max(1, measured.accepted));
    figures = {
      scenario: 'ingest',
      postsPerSec,
      batch: options.batch,
      connections: options.connections,
      accepted: measured.accepted,
      refused: measured.refused,
      statuses: measured.statuses,
      callP50Ms: round2(percentile(measured.times, 50)),
      callP99Ms: round2(percentile(measured.times, 99)),
      seconds: round2(measured.elapsed),
      cpuCores: cpu,
      gatewayCpuUsPerPost:
        cpu.gateway === null || cpu.gateway === undefined
          ? null
          : round2((cpu.gateway * 1e6) / postsPerSec),
      // What one whole core of gateway would ingest at the CPU per post measured (an estimate:
      // the machine is shared and the gateway got only part of a core).
      postsPerGatewayCpuSec:
        cpu.gateway === null || cpu.gateway === undefined || cpu.gateway === 0
          ? null
          : Math.round(postsPerSec / cpu.gateway),
      redisCpuUsPerPost: round2(((cpu['redis-server'] ?? 0) * 1e6) / postsPerSec),
      redisCallsPerPost: perPost(sum(calls.values())),
      redisCallsPerPostByName: Object.fromEntries(
        [...calls].sort((a, b) => b[1] - a[1]).map(([name, n]) => [name, perPost(n)]),
      ),
      benchLag: measured.lag,
      windowPosts: options.windowPosts,
      machine: machineFacts(),
    };
  } finally {
    for (const connection of connections) connection.close();
    await gateway?.stop().catch(() => {});
    await redis.stop();
  }
  if (options.profileDir) figures.profiles = await logProfiles(options.profileDir, stamp, log);
  return figures;
}
