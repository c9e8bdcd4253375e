import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { RoleProcess } from '@bubble/test-utils';
import { startBenchRedis } from './bench-redis.js';
import {
  openFilesHardLimit,
  processCpuSeconds,
  processFdCount,
  processRssBytes,
} from './children.js';
import { forkDriver, type DriverHandle } from './driver-process.js';
import { logProfiles } from './profile-summary.js';
import {
  benchSecrets,
  machineFacts,
  round2,
  seedStore,
  sleep,
  startProfiledGateway,
} from './live-stack.js';
import { sampleProcessMemory, type ProcessMemorySample } from './process-memory.js';
import { buildScenarioWorkload, type ScenarioWorkloadOptions, type Workload } from './workload.js';
import type { WsConnectResult, WsReport } from './ws-driver.js';

/** The users are the connections (and the warm-up's): no `users` of its own. */
export interface ConnectionsOptions extends Omit<ScenarioWorkloadOptions, 'users'> {
  /** Connections wanted (one user each); fewer when the open-files limit does not allow it. */
  connections: number;
  pools: number;
  /** Connections opened and closed first, so the gateway's code and pools are warm. */
  warmupConnections: number;
  drivers: number;
  perAddress: number;
  connectConcurrency: number;
  connectSeconds: number;
  /** Time the connections stay idle before memory is measured. */
  idleSeconds: number;
  profileDir: string | undefined;
}

export const CONNECTIONS_DEFAULTS: ConnectionsOptions = {
  connections: 20_000,
  authors: 50_000,
  windowPosts: 100_000,
  followMedian: 150,
  followCap: 2000,
  pools: 100,
  warmupConnections: 1000,
  drivers: 2,
  perAddress: 40,
  connectConcurrency: 200,
  connectSeconds: 300,
  idleSeconds: 15,
  seed: 13,
  profileDir: undefined,
  log: () => {},
};

/** File descriptors the gateway keeps for itself besides client sockets (Redis, logs, slack). */
const FD_MARGIN = 64;

/**
 * bench.md "connections": idle authenticated WebSocket connections (one user each, header
 * auth) on one `bubble gateway` child; its memory (after a forced GC) before and after, per
 * connection.
 */
export async function benchConnections(partial: Partial<ConnectionsOptions> = {}) {
  const options = { ...CONNECTIONS_DEFAULTS, ...partial };
  const { log } = options;
  const stamp = `${Date.now()}-connections`;
  const total = options.connections + options.warmupConnections;
  const workload = buildScenarioWorkload('connections', { ...options, users: total });
  const redis = await startBenchRedis(options);
  const { store, service } = redis;
  const dir = await mkdtemp(path.join(tmpdir(), 'bubble-connections-'));
  const memoryFile = path.join(dir, 'memory.jsonl');
  let gateway: RoleProcess | undefined;
  const drivers: DriverHandle[] = [];
  let figures: Record<string, unknown>;
  try {
    await seedStore(store, service, workload, log, 'connections');
    const secrets = benchSecrets();
    gateway = await startProfiledGateway(redis.url, secrets, options, stamp, {
      env: { BUBBLE_BENCH_MEMORY_PROBE: memoryFile },
      nodeArgs: ['--expose-gc', '--import', new URL('./gateway-probe.js', import.meta.url).href],
    });
    const hardLimit = await openFilesHardLimit();
    const ownFds = (await processFdCount(gateway.pid)) ?? 0;
    const fdBudget = hardLimit === null ? Infinity : hardLimit - ownFds - FD_MARGIN;
    const target = Math.min(options.connections, fdBudget);
    if (target < options.connections) {
      log(
        `connections: the open-files limit (hard RLIMIT_NOFILE ${hardLimit}, which this ` +
          `container does not let a process raise) allows the gateway ${target} connections ` +
          `besides its own ${ownFds} descriptors; opening ${target}`,
      );
    }
    const url = `ws://127.0.0.1:${gateway.port}/v1/ws`;
    const base = { url, perAddress: options.perAddress, jwtSecret: secrets.jwtSecret };

    // Warm-up from addresses the measured clients do not use (the limiter's buckets stay full).
    log(`connections: warm-up: ${options.warmupConnections} connections opened and closed`);
    const warm = forkDriver(new URL('./ws-driver.js', import.meta.url), 'warm-up', log);
    try {
      await warm.call<WsConnectResult>('connect', {
        ...base,
        users: workload.users.slice(options.connections, total),
        firstIndex: total,
        concurrency: options.connectConcurrency,
        seconds: options.connectSeconds,
      });
      await warm.call('close');
    } finally {
      await warm.stop();
    }
    await sleep(3000);
    const before = await sampleProcessMemory(gateway.pid, memoryFile);
    log(`connections: gateway before: ${describe(before)}`);

    const cpuBefore = await processCpuSeconds(gateway.pid);
    const started = performance.now();
    const results = await connect(options, workload, target, base, drivers);
    const connectSeconds = (performance.now() - started) / 1000;
    const cpuAfter = await processCpuSeconds(gateway.pid);
    const connected = results.reduce((sum, r) => sum + r.connected, 0);
    const retries = results.reduce((sum, r) => sum + r.retries, 0);
    const errors: Record<string, number> = {};
    for (const r of results) {
      for (const [e, c] of Object.entries(r.errors)) errors[e] = (errors[e] ?? 0) + c;
    }
    log(
      `connections: ${connected} of ${target} connected in ${connectSeconds.toFixed(1)} s` +
        (Object.keys(errors).length > 0 ? `; failures ${JSON.stringify(errors)}` : '') +
        `; idle for ${options.idleSeconds} s`,
    );
    await sleep(options.idleSeconds * 1000);
    const rssNoGc = await processRssBytes(gateway.pid);
    const after = await sampleProcessMemory(gateway.pid, memoryFile);
    const reports = await Promise.all(drivers.map((d) => d.call<WsReport>('report')));
    const open = reports.reduce((sum, r) => sum + r.open, 0);
    const fds = await processFdCount(gateway.pid);
    log(`connections: gateway after: ${describe(after)}; ${open} still open, ${fds} descriptors`);
    for (const driver of drivers) await driver.call('close');
    await sleep(3000);
    const closed = await sampleProcessMemory(gateway.pid, memoryFile);
    const per = (key: 'rss' | 'heapUsed' | 'heapTotal' | 'external' | 'arrayBuffers') =>
      Math.round((after[key] - before[key]) / Math.max(1, open));
    figures = {
      scenario: 'connections',
      connectionsTarget: options.connections,
      connections: open,
      connected,
      connectFailures: errors,
      connectRetries: retries,
      openFilesHardLimit: hardLimit,
      rssBytesPerConn: per('rss'),
      heapBytesPerConn: per('heapUsed'),
      heapTotalBytesPerConn: per('heapTotal'),
      // The part of the RSS growth that closing every connection gives back; the rest is the
      // heap and allocator high-water of the connection storm (cold starts), kept by the process.
      rssBytesPerConnReleasedOnClose: Math.round((after.rss - closed.rss) / Math.max(1, open)),
      externalBytesPerConn: per('external'),
      rssBytesPerConnThoroughGc:
        after.thorough && before.thorough
          ? Math.round((after.thorough.rss - before.thorough.rss) / Math.max(1, open))
          : null,
      heapTotalBytesPerConnThoroughGc:
        after.thorough && before.thorough
          ? Math.round((after.thorough.heapTotal - before.thorough.heapTotal) / Math.max(1, open))
          : null,
      rssBytesPerConnNoGc:
        rssNoGc === null ? null : Math.round((rssNoGc - before.rss) / Math.max(1, open)),
      rssBefore: before.rss,
      rssAfter: after.rss,
      heapUsedBefore: before.heapUsed,
      heapUsedAfter: after.heapUsed,
      rssAfterClose: closed.rss,
      heapUsedAfterClose: closed.heapUsed,
      heapTotalBefore: before.heapTotal,
      heapTotalAfter: after.heapTotal,
      heapTotalAfterClose: closed.heapTotal,
      connectSeconds: round2(connectSeconds),
      connectsPerSec: Math.round(connected / connectSeconds),
      gatewayCpuMsPerConnect:
        cpuBefore === null || cpuAfter === null
          ? null
          : round2(((cpuAfter - cpuBefore) * 1000) / connected),
      closes: Object.assign({}, ...reports.map((r) => r.closes)) as Record<string, number>,
      forcedGc: after.gc,
      machine: machineFacts(),
    };
  } finally {
    await Promise.all(drivers.map((d) => d.stop().catch(() => {})));
    await gateway?.stop().catch(() => {});
    await redis.stop();
    await rm(dir, { recursive: true, force: true });
  }
  if (options.profileDir) figures.profiles = await logProfiles(options.profileDir, stamp, log);
  return figures;
}

async function connect(
  options: ConnectionsOptions,
  workload: Workload,
  target: number,
  base: { url: string; perAddress: number; jwtSecret: string },
  drivers: DriverHandle[],
): Promise<WsConnectResult[]> {
  const per = Math.ceil(target / options.drivers);
  return Promise.all(
    Array.from({ length: options.drivers }, (_, d) => {
      const driver = forkDriver(
        new URL('./ws-driver.js', import.meta.url),
        `driver${d}`,
        options.log,
      );
      drivers.push(driver);
      const from = d * per;
      return driver.call<WsConnectResult>('connect', {
        ...base,
        users: workload.users.slice(from, Math.min(target, from + per)),
        firstIndex: from,
        concurrency: Math.ceil(options.connectConcurrency / options.drivers),
        seconds: options.connectSeconds,
      });
    }),
  );
}

function describe(m: ProcessMemorySample): string {
  const mib = (b: number) => `${(b / 1048576).toFixed(1)} MiB`;
  return `rss ${mib(m.rss)}, heap used ${mib(m.heapUsed)}, external ${mib(m.external)}`;
}
