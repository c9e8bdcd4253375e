import type { RoleProcess } from '@bubble/test-utils';
import { startBenchRedis } from './bench-redis.js';
import { benchColdStart } from './cold-start.js';
import { forkDriver, type DriverHandle } from './driver-process.js';
import { logProfiles } from './profile-summary.js';
import {
  benchSecrets,
  cpuShares,
  cpuSnapshot,
  machineFacts,
  round2,
  seedStore,
  startProfiledGateway,
} from './live-stack.js';
import type { PollRunResult } from './poll-driver.js';
import { buildScenarioWorkload, type ScenarioWorkloadOptions } from './workload.js';

export interface PollOptions extends ScenarioWorkloadOptions {
  pools: number;
  /** Driver processes, keep-alive connections per driver, requests in flight per connection. */
  drivers: number;
  connections: number;
  depth: number;
  warmupSeconds: number;
  seconds: number;
  /** Cold computes of 2000-follow users (cold-start's approach): users and repeats each. */
  coldUsers: number;
  coldRepeats: number;
  profileDir: string | undefined;
}

export const POLL_DEFAULTS: PollOptions = {
  users: 10_000,
  authors: 50_000,
  windowPosts: 100_000,
  followMedian: 150,
  followCap: 2000,
  pools: 100,
  drivers: 1,
  connections: 50,
  depth: 16,
  warmupSeconds: 3,
  seconds: 20,
  coldUsers: 50,
  coldRepeats: 10,
  seed: 17,
  profileDir: undefined,
  log: () => {},
};

/**
 * bench.md "poll": `GET /v1/badge` on one `bubble gateway` child for 10k users, each first
 * polled once (a cold start that holds the user on the gateway), then polled round robin with
 * `If-None-Match` (the 304 path) and without (200, the badge from the gateway's cache), over
 * pipelined keep-alive connections from driver processes. Then cold computes of 2000-follow
 * users as the cold-start scenario times them.
 */
export async function benchPoll(partial: Partial<PollOptions> = {}) {
  const options = { ...POLL_DEFAULTS, ...partial };
  const { log } = options;
  const stamp = `${Date.now()}-poll`;
  const workload = buildScenarioWorkload('poll', options);
  const redis = await startBenchRedis(options);
  const { store, service } = redis;
  let gateway: RoleProcess | undefined;
  const drivers: DriverHandle[] = [];
  let figures: Record<string, unknown>;
  try {
    await seedStore(store, service, workload, log, 'poll');
    const secrets = benchSecrets();
    gateway = await startProfiledGateway(redis.url, secrets, options, stamp);
    const per = Math.ceil(options.users / options.drivers);
    for (let d = 0; d < options.drivers; d++) {
      const driver = forkDriver(new URL('./poll-driver.js', import.meta.url), `poller${d}`, log);
      drivers.push(driver);
      await driver.call('init', {
        host: '127.0.0.1',
        port: gateway.port,
        users: workload.users.slice(d * per, Math.min(options.users, (d + 1) * per)),
        firstIndex: d * options.connections,
        jwtSecret: secrets.jwtSecret,
        connections: options.connections,
        depth: options.depth,
      });
    }
    const primeStarted = performance.now();
    const primed = await Promise.all(
      drivers.map((d) => d.call<{ statuses: Record<string, number> }>('prime', { depth: 4 })),
    );
    const primeSeconds = (performance.now() - primeStarted) / 1000;
    log(
      `poll: ${options.users} users polled once (cold starts) in ${primeSeconds.toFixed(1)} s: ` +
        JSON.stringify(primed.map((p) => p.statuses)),
    );
    const pids = {
      gateway: gateway.pid,
      ...Object.fromEntries(drivers.map((d, i) => [`poller${i}`, d.pid])),
    };
    const run = async (conditional: boolean) => {
      const label = conditional ? 'If-None-Match (304)' : 'plain (200)';
      await Promise.all(
        drivers.map((d) => d.call('run', { conditional, seconds: options.warmupSeconds })),
      );
      const before = await cpuSnapshot(pids);
      const results = await Promise.all(
        drivers.map((d) => d.call<PollRunResult>('run', { conditional, seconds: options.seconds })),
      );
      const cpu = cpuShares(before, await cpuSnapshot(pids));
      const responses = results.reduce((sum, r) => sum + r.responses, 0);
      const seconds = Math.max(...results.map((r) => r.seconds));
      const byStatus: Record<string, number> = {};
      for (const r of results) {
        for (const [status, n] of Object.entries(r.byStatus))
          byStatus[status] = (byStatus[status] ?? 0) + n;
      }
      const reqPerSec = Math.round(responses / seconds);
      log(
        `poll: ${label}: ${reqPerSec} req/s over ${seconds.toFixed(1)} s ${JSON.stringify(byStatus)}; ` +
          `CPU (cores) ${JSON.stringify(cpu)}; driver lag p99 ${results.map((r) => r.lag.p99Ms).join(', ')} ms`,
      );
      const gatewayCores = cpu.gateway ?? 0;
      return {
        reqPerSec,
        // What one whole core of gateway would answer at the CPU per request measured (an
        // estimate: the machine is shared and the gateway got only part of a core).
        perGatewayCpuSec: gatewayCores > 0 ? Math.round(reqPerSec / gatewayCores) : null,
        byStatus,
        cpu,
        driverLag: results.map((r) => r.lag),
      };
    };
    const conditional = await run(true);
    const plain = await run(false);
    figures = {
      scenario: 'poll',
      users: options.users,
      reqPerSec304: conditional.reqPerSec,
      reqPerSec200: plain.reqPerSec,
      reqPerGatewayCpuSec304: conditional.perGatewayCpuSec,
      reqPerGatewayCpuSec200: plain.perGatewayCpuSec,
      statuses304: conditional.byStatus,
      statuses200: plain.byStatus,
      cpuCores304: conditional.cpu,
      cpuCores200: plain.cpu,
      driverLag304: conditional.driverLag,
      driverLag200: plain.driverLag,
      drivers: options.drivers,
      connectionsPerDriver: options.connections,
      pipelineDepth: options.depth,
      seconds: options.seconds,
      primeSeconds: round2(primeSeconds),
      machine: machineFacts(),
    };
  } finally {
    await Promise.all(drivers.map((d) => d.stop().catch(() => {})));
    await gateway?.stop().catch(() => {});
    await redis.stop();
  }
  if (options.profileDir) figures.profiles = await logProfiles(options.profileDir, stamp, log);
  log(`poll: cold computes of 2000-follow users (the cold-start scenario's approach)`);
  const cold = await benchColdStart({
    users: options.coldUsers,
    repeats: options.coldRepeats,
    follows: 2000,
    log,
  });
  return {
    ...figures,
    coldComputeP50Ms_2000: cold.coldStartP50Ms,
    coldComputeP99Ms_2000: cold.coldStartP99Ms,
    coldComputeMaxMs_2000: cold.coldStartMaxMs,
    coldComputeSamples: cold.samples,
  };
}
