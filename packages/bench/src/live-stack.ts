import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { BadgeService } from '@bubble/badges';
import { GATEWAY_NODE_FLAGS } from '@bubble/gateway';
import type { RedisStore } from '@bubble/store';
import type { RoleProcess } from '@bubble/test-utils';
import { processCpuSeconds, spawnRole } from './children.js';
import { followedAuthors, type Workload } from './workload.js';

export { wallNow } from './identity.js';

/**
 * What the live scenarios (latency, connections, poll, ingest) share: secrets and tokens,
 * seeding a redis-server, a `bubble gateway` child, CPU and event-loop figures, profiles.
 */

export const KEY_PREFIX = 'ub';

export interface BenchSecrets {
  apiKey: string;
  jwtSecret: string;
}

/** Fresh secrets for one run, handed to the children as BUBBLE_API_KEY and BUBBLE_JWT_SECRET. */
export function benchSecrets(): BenchSecrets {
  return {
    apiKey: randomBytes(24).toString('base64url'),
    jwtSecret: randomBytes(32).toString('base64url'),
  };
}

/** Follows, posts and read cursors of `workload`, through the store and service APIs. */
export async function seedStore(
  store: RedisStore,
  service: BadgeService,
  workload: Workload,
  log: (line: string) => void,
  label: string,
): Promise<{ edges: number; seconds: number }> {
  const started = performance.now();
  const n = workload.users.length;
  let edges = 0;
  for (let i = 0; i < n; i += 1000) {
    const writes: Promise<unknown>[] = [];
    for (let u = i; u < Math.min(i + 1000, n); u++) {
      const names = followedAuthors(workload, u);
      edges += names.length;
      writes.push(store.follows.replace(workload.users[u]!, names));
    }
    await Promise.all(writes);
  }
  log(`${label}: follows of ${n} users stored (${edges} edges)`);
  const cursors = await storePostsAndCursors(store, service, workload);
  const seconds = (performance.now() - started) / 1000;
  log(
    `${label}: ${workload.posts.length} posts and ${cursors} read cursors stored ` +
      `(${seconds.toFixed(1)} s in all)`,
  );
  return { edges, seconds };
}

/** `bubble gateway` as a child process on a free port, once /readyz answers 200. */
export async function startGateway(options: {
  redisUrl: string;
  pools: number;
  secrets: BenchSecrets;
  env?: Record<string, string>;
  nodeArgs?: string[];
  /** A free one by default. */
  port?: number;
  log: (line: string) => void;
}): Promise<RoleProcess> {
  const child = await spawnRole({
    role: 'gateway',
    port: options.port,
    env: {
      ...roleEnv(options.redisUrl, options.pools),
      BUBBLE_API_KEY: options.secrets.apiKey,
      BUBBLE_JWT_SECRET: options.secrets.jwtSecret,
      // The drivers are one address polling far above any user's interval: that load is the
      // point, so the client-route limits are out of its way.
      BUBBLE_CLIENT_USER_RATE: '1000000',
      BUBBLE_CLIENT_USER_BURST: '1000000',
      BUBBLE_CLIENT_ADDRESS_RATE: '1000000',
      BUBBLE_CLIENT_ADDRESS_BURST: '10000000',
      ...options.env,
    },
    // Started as docs/deployment.md starts a gateway: with its young generation.
    nodeArgs: [...GATEWAY_NODE_FLAGS, ...(options.nodeArgs ?? [])],
    log: options.log,
  });
  try {
    await child.waitHttpOk(`${child.url}/readyz`, 30_000);
  } catch (err) {
    await child.stop();
    throw err;
  }
  return child;
}

/**
 * A scenario's `bubble gateway` on its redis-server, with the scenario's pools and log; it writes
 * a CPU profile named after `stamp` when `profileDir` is set.
 */
export async function startProfiledGateway(
  redisUrl: string,
  secrets: BenchSecrets,
  scenario: { pools: number; profileDir: string | undefined; log: (line: string) => void },
  stamp: string,
  extra: { env?: Record<string, string>; nodeArgs?: string[] } = {},
): Promise<RoleProcess> {
  const profileArgs = await cpuProfileArgs(scenario.profileDir, `${stamp}-gateway`);
  return startGateway({
    redisUrl,
    pools: scenario.pools,
    secrets,
    env: extra.env,
    nodeArgs: [...profileArgs, ...(extra.nodeArgs ?? [])],
    log: scenario.log,
  });
}

/** The window's posts (through the service, 5000 a call) and the read cursors of `workload`. */
export async function storePostsAndCursors(
  store: RedisStore,
  service: BadgeService,
  workload: Workload,
): Promise<number> {
  for (let i = 0; i < workload.posts.length; i += 5000) {
    await service.ingestPosts(
      workload.posts
        .slice(i, i + 5000)
        .map((p) => ({ author: workload.authors[p.author]!, id: p.id, ts: p.ts })),
    );
  }
  const cursors: Promise<number>[] = [];
  workload.readAt.forEach((readAt, u) => {
    if (readAt !== null) cursors.push(store.cursors.advanceFeedReadAt(workload.users[u]!, readAt));
  });
  await Promise.all(cursors);
  return cursors.length;
}

/** The environment every role child of a scenario shares. */
export function roleEnv(redisUrl: string, pools: number): Record<string, string> {
  return {
    REDIS_URL: redisUrl,
    BUBBLE_POOLS: String(pools),
    BUBBLE_KEY_PREFIX: KEY_PREFIX,
    LOG_LEVEL: 'info',
  };
}

/** Node flags that make a child write a CPU profile on exit into `dir` (none without a dir). */
export async function cpuProfileArgs(dir: string | undefined, name: string): Promise<string[]> {
  if (!dir) return [];
  await mkdir(dir, { recursive: true });
  return [
    '--cpu-prof',
    `--cpu-prof-dir=${path.resolve(dir)}`,
    `--cpu-prof-name=${name}.cpuprofile`,
  ];
}

/** Event-loop delay of this process over a measured stretch. */
export class LoopLag {
  private readonly histogram = monitorEventLoopDelay({ resolution: 10 });

  start(): void {
    this.histogram.reset();
    this.histogram.enable();
  }

  stop(): { p50Ms: number; p99Ms: number; maxMs: number } {
    this.histogram.disable();
    const ms = (ns: number) => round2(ns / 1e6);
    return {
      p50Ms: ms(this.histogram.percentile(50)),
      p99Ms: ms(this.histogram.percentile(99)),
      maxMs: ms(this.histogram.max),
    };
  }
}

/** CPU seconds of several processes at once; diff two with cpuShares. */
export async function cpuSnapshot(pids: Record<string, number>) {
  const entries = await Promise.all(
    Object.entries(pids).map(async ([name, pid]) => [name, await processCpuSeconds(pid)] as const),
  );
  return { at: performance.now(), seconds: Object.fromEntries(entries) };
}

/** Per process, the share of one core used between two snapshots (1 = a whole core). */
export function cpuShares(
  before: Awaited<ReturnType<typeof cpuSnapshot>>,
  after: Awaited<ReturnType<typeof cpuSnapshot>>,
): Record<string, number | null> {
  const wall = (after.at - before.at) / 1000;
  const shares: Record<string, number | null> = {};
  for (const [name, end] of Object.entries(after.seconds)) {
    const start = before.seconds[name];
    shares[name] =
      end === null || start === null || start === undefined ? null : round2((end - start) / wall);
  }
  return shares;
}

/** Facts about the machine a figure came from. */
export function machineFacts() {
  return {
    cpus: os.cpus().length,
    loadAverage1m: round2(os.loadavg()[0]!),
  };
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export function round2(x: number): number {
  return Math.round(x * 100) / 100;
}
