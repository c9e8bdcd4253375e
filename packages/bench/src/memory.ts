import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BadgeService } from '@bubble/badges';
import { DAY_MS, type Clock, type SweepReport } from '@bubble/protocol';
import { exitText, waitFor, type RoleProcess } from '@bubble/test-utils';
import type { RedisStore } from '@bubble/store';
import type { Redis } from 'ioredis';
import { startBenchRedis } from './bench-redis.js';
import { startBenchSources, workloadGraph, type BenchSources } from './bench-sources.js';
import { spawnRole, stopAll } from './children.js';
import { forkDriver, type DriverHandle } from './driver-process.js';
import {
  KEY_PREFIX,
  benchSecrets,
  machineFacts,
  roleEnv,
  round2,
  seedStore,
  startGateway,
  storePostsAndCursors,
} from './live-stack.js';
import { conversationBytes, followListBytes } from './memory-addons.js';
import { sampleProcessMemory, type ProcessMemorySample } from './process-memory.js';
import {
  perUser,
  redisMemory,
  USER_KEY_CLASSES,
  type RedisMemorySnapshot,
} from './redis-memory.js';
import { buildScenarioWorkload, type ScenarioWorkloadOptions } from './workload.js';
import type { WsConnectResult } from './ws-driver.js';

export interface MemoryOptions extends ScenarioWorkloadOptions {
  /** Users with a WebSocket each, brought online in two halves. */
  users: number;
  /** Of them, connected and closed first so the gateway's and core's code is warm. */
  warmupUsers: number;
  /**
   * Few enough that each pool holds over 128 users: Redis then keeps the per-pool hashes and
   * sorted sets in the encodings a production pool has (hashtable, skiplist), not listpacks.
   */
  pools: number;
  perAddress: number;
  connectConcurrency: number;
  /** Bound on each wait (users held, connections opened, presence gone). */
  waitSeconds: number;
  inactiveDays: number;
  /**
   * With a sources endpoint (the default): the follows live in the endpoint the bench starts,
   * the roles and the lifecycle job run as with BUBBLE_SOURCES_URL set. Without: follows are
   * seeded into Redis and kept after the drop, as before issue 36.
   */
  sources: boolean;
  /** The follow list measured at exactly `fixedFollows` follows, for this many extra users. */
  fixedFollows: number;
  fixedFollowUsers: number;
  /** Of the dropped users, these are put in `conversationsPerUser` conversations each. */
  conversationUsers: number;
  conversationsPerUser: number;
  conversationMessages: number;
}

export const MEMORY_DEFAULTS: MemoryOptions = {
  users: 10_000,
  warmupUsers: 500,
  authors: 50_000,
  windowPosts: 400_000,
  followMedian: 150,
  followCap: 2000,
  pools: 10,
  perAddress: 40,
  connectConcurrency: 200,
  waitSeconds: 180,
  inactiveDays: 30,
  sources: true,
  fixedFollows: 243,
  fixedFollowUsers: 1000,
  conversationUsers: 1000,
  conversationsPerUser: 5,
  conversationMessages: 20,
  seed: 7,
  log: () => {},
};

const TICK_MS = 1000;
const INACTIVE_JOB_LIMIT = 1000;
/** A platform's ids are often longer than the workload's ("a123"): the follow list with these. */
const LONG_ID_CHARS = 12;

/**
 * bench.md "memory": Redis bytes per user by kind, core heap per held user, gateway bytes per
 * connection, on a real redis-server with real `bubble server`, `core` and `gateway` children.
 * The same users go through their lifecycle: sources stored (with an endpoint, the platform
 * holds their follows and Redis only posts and cursors); online (a WebSocket each: sight,
 * presence, route, badge state, held by the core; with an endpoint, their follows fetched and
 * installed by the roles); offline (sockets closed, presence and route gone); inactive (the
 * leader's inactive-user job, run as the code has it, with a clock `inactiveDays` + 1 days
 * ahead). Then two add-ons: a follow list at exactly `fixedFollows` follows, and memberships
 * with conversation cursors (memory-addons.ts). Redis is measured after each step by MEMORY USAGE over every
 * key, by what the key holds (redis-memory.ts); the core and the gateway by
 * process.memoryUsage() after a forced GC (gateway-probe.ts), before and after their users.
 */
export async function benchMemory(partial: Partial<MemoryOptions> = {}) {
  const options = { ...MEMORY_DEFAULTS, ...partial };
  const { log } = options;
  if (options.warmupUsers >= options.users / 2) {
    throw new Error('memory: warmupUsers must be under half of users');
  }
  const workload = buildScenarioWorkload('memory', options);
  const redis = await startBenchRedis({ ...options, sourcesOnDemand: options.sources });
  const { store, service, admin } = redis;
  const dir = await mkdtemp(path.join(tmpdir(), 'bubble-memory-'));
  const children: RoleProcess[] = [];
  const drivers: DriverHandle[] = [];
  let gateway: RoleProcess | undefined;
  let endpoint: BenchSources | undefined;
  const n = options.users;
  try {
    const empty = await redisMemory(admin, KEY_PREFIX);
    let edges = 0;
    if (options.sources) {
      endpoint = await startBenchSources(workloadGraph(workload, { readAt: false }));
      for (const follows of workload.follows) edges += follows.length;
      await storePostsAndCursors(store, service, workload);
      log(`memory: posts and cursors stored; ${edges} follows in the sources endpoint`);
    } else {
      edges = (await seedStore(store, service, workload, log, 'memory')).edges;
    }
    const sources = await redisMemory(admin, KEY_PREFIX);
    log(`memory: sources stored: ${describeRedis(sources, n)}`);

    const env = {
      ...roleEnv(redis.url, options.pools),
      BUBBLE_TICK: String(TICK_MS),
      ...endpoint?.env,
    };
    const probe = (name: string) => ({
      file: path.join(dir, `${name}.jsonl`),
      nodeArgs: ['--expose-gc', '--import', new URL('./gateway-probe.js', import.meta.url).href],
    });
    const coreProbe = probe('core');
    const gatewayProbe = probe('gateway');
    children.push(await spawnRole({ role: 'server', env, log }));
    const core = await spawnRole({
      role: 'core',
      env: { ...env, BUBBLE_BENCH_MEMORY_PROBE: coreProbe.file },
      nodeArgs: coreProbe.nodeArgs,
      log,
    });
    children.push(core);
    const secrets = benchSecrets();
    gateway = await startGateway({
      redisUrl: redis.url,
      pools: options.pools,
      secrets,
      env: { BUBBLE_BENCH_MEMORY_PROBE: gatewayProbe.file, ...endpoint?.env },
      nodeArgs: gatewayProbe.nodeArgs,
      log,
    });
    const held = (users: number) => waitHeld(admin, core, options, users);
    await held(0);

    const url = `ws://127.0.0.1:${gateway.port}/v1/ws`;
    // `addressOffset` keeps the warm-up's source addresses apart (the limiter's buckets stay full).
    const connect = async (name: string, from: number, to: number, addressOffset = 0) => {
      const driver = forkDriver(new URL('./ws-driver.js', import.meta.url), name, log);
      drivers.push(driver);
      const result = await driver.call<WsConnectResult>('connect', {
        url,
        perAddress: options.perAddress,
        jwtSecret: secrets.jwtSecret,
        users: workload.users.slice(from, to),
        firstIndex: from + addressOffset,
        concurrency: options.connectConcurrency,
        seconds: options.waitSeconds,
      });
      if (result.connected !== to - from) {
        throw new Error(
          `memory: ${name} connected ${result.connected} of ${to - from} (${JSON.stringify(result.errors)})`,
        );
      }
      return driver;
    };

    log(`memory: warm-up: ${options.warmupUsers} users connect and leave`);
    const warm = await connect('warm-up', 0, options.warmupUsers, n);
    await held(options.warmupUsers);
    await waitSourcesHeld(store, workload.users.slice(0, options.warmupUsers), options);
    await warm.call('close');
    await held(0);
    const coreBefore = await sampleProcessMemory(core.pid, coreProbe.file);
    const gatewayBefore = await sampleProcessMemory(gateway.pid, gatewayProbe.file);

    const half = Math.floor(n / 2);
    await connect('first-half', 0, half);
    await held(half);
    await waitSourcesHeld(store, workload.users.slice(0, half), options);
    await waitSweeps(admin, options, 2);
    const coreHalf = await sampleProcessMemory(core.pid, coreProbe.file);
    await connect('second-half', half, n);
    const report = await held(n);
    await waitFor(async () => (await sumOver(admin, options.pools, 'hlen', 'badges')) >= n, {
      timeoutMs: options.waitSeconds * 1000,
      message: 'memory: every online user has a stored badge state',
    });
    // The installs of the last fetches are loaded by the core's next sweep.
    await waitSourcesHeld(store, workload.users, options);
    await waitSweeps(admin, options, 2);
    const coreAfter = await sampleProcessMemory(core.pid, coreProbe.file);
    const gatewayAfter = await sampleProcessMemory(gateway.pid, gatewayProbe.file);
    const online = await redisMemory(admin, KEY_PREFIX);
    log(`memory: ${n} online: ${describeRedis(online, n)}`);
    log(`memory: core ${describeProcess(coreBefore)} → ${describeProcess(coreAfter)}`);
    log(`memory: gateway ${describeProcess(gatewayBefore)} → ${describeProcess(gatewayAfter)}`);

    for (const driver of drivers) await driver.call('close').catch(() => {});
    await waitFor(
      async () =>
        (await sumOver(admin, options.pools, 'zcard', 'online')) === 0 &&
        (await sumOver(admin, options.pools, 'hlen', 'routes')) === 0,
      { timeoutMs: options.waitSeconds * 1000, message: 'memory: presence and routes gone' },
    );
    await held(0);
    const offline = await redisMemory(admin, KEY_PREFIX);
    log(`memory: ${n} offline: ${describeRedis(offline, n)}`);

    // The leader's lifecycle job as it runs (roles.ts), `inactiveDays` + 1 days later: past the
    // inactive window and the lookback, so badge states expire too.
    const later: Clock = { now: () => Date.now() + (options.inactiveDays + 1) * DAY_MS };
    const job = new BadgeService(store, later, {
      followCap: options.followCap,
      inactiveDays: options.inactiveDays,
    });
    let dropped = 0;
    for (let run = 0; run <= Math.ceil(n / INACTIVE_JOB_LIMIT) + 1; run++) {
      const batch = await job.dropInactiveUsers(INACTIVE_JOB_LIMIT);
      dropped += batch.length;
      if (batch.length < INACTIVE_JOB_LIMIT) break;
    }
    let expired = 0;
    for (let run = 0; run <= Math.ceil(n / INACTIVE_JOB_LIMIT) + 1; run++) {
      const batch = await job.expireOfflineBadges(INACTIVE_JOB_LIMIT);
      expired += batch;
      if (batch === 0) break;
    }
    const inactive = await redisMemory(admin, KEY_PREFIX);
    log(`memory: ${dropped} dropped as inactive: ${describeRedis(inactive, n)}`);

    const fixed = await followListBytes(store, admin, workload, {
      users: options.fixedFollowUsers,
      follows: options.fixedFollows,
      pools: options.pools,
      seed: options.seed + 1,
    });
    log(`memory: at ${fixed.follows} follows: ${JSON.stringify(fixed)}`);
    const fixedLongIds = await followListBytes(store, admin, workload, {
      users: options.fixedFollowUsers,
      follows: options.fixedFollows,
      pools: options.pools,
      seed: options.seed + 1,
      idChars: LONG_ID_CHARS,
    });
    log(`memory: at ${fixed.follows} follows of longer ids: ${JSON.stringify(fixedLongIds)}`);
    const conversations = await conversationBytes(service, admin, workload, {
      users: options.conversationUsers,
      perUser: options.conversationsPerUser,
      messages: options.conversationMessages,
      now: Date.now(),
    });
    log(`memory: memberships and conversation cursors: ${JSON.stringify(conversations)}`);

    const activeUser = perUser(online, n);
    const offlineUser = perUser(offline, n);
    const inactiveUser = perUser(inactive, n);
    // What the platform told about them (docs/semantics.md, Lifecycle): memberships with their
    // conversation cursors stay after the drop; follows too, without a sources endpoint.
    const sourceClasses = ['follows', 'conversations'] as const;
    const sourceBytes = (s: RedisMemorySnapshot) =>
      sourceClasses.reduce((sum, name) => sum + s.bytes[name], 0);
    const userBytes = (s: RedisMemorySnapshot) =>
      USER_KEY_CLASSES.reduce((sum, name) => sum + s.bytes[name], 0);
    const heapPlusExternal = (m: ProcessMemorySample) => m.heapUsed + m.external;
    const per = (bytes: number, users: number) => Math.round(bytes / Math.max(1, users));
    return {
      scenario: 'memory',
      users: n,
      pools: options.pools,
      authors: options.authors,
      windowPosts: options.windowPosts,
      sources: options.sources ? 'endpoint' : 'redis',
      meanFollows: round2(edges / n),
      method:
        'Redis: MEMORY USAGE key SAMPLES 0 summed over SCANned keys by what they hold; ' +
        'processes: process.memoryUsage() after a forced GC',
      redisBytesPerActiveUser: activeUser.total,
      redisBytesPerOfflineUser: offlineUser.total,
      redisBytesPerInactiveUser: inactiveUser.total,
      redisBytesPerInactiveUserBeyondSources: per(userBytes(inactive) - sourceBytes(inactive), n),
      // While every user is held (online): the follow lists of the workload's users.
      redisBytesPerFollow: round2(online.bytes.follows / edges),
      [`redisBytesPerFollow_${fixed.follows}`]: fixed.bytesPerFollow,
      followList: fixed,
      followListLongIds: fixedLongIds,
      // What stays of a dropped user who is a member of conversations (memory-addons.ts).
      conversationBytesPerUser: conversations.bytesPerUser,
      conversations,
      redisBytesPerWindowPost: round2(sources.bytes.posts / options.windowPosts),
      activeUserByKind: activeUser.byClass,
      offlineUserByKind: offlineUser.byClass,
      inactiveUserByKind: inactiveUser.byClass,
      redisLogBytes: online.bytes.logs,
      redisClusterBytes: online.bytes.cluster,
      redisBytesPerActiveUserBeyondSources: per(userBytes(online) - sourceBytes(online), n),
      // A cross-check that includes what MEMORY USAGE leaves out (client buffers, the logs).
      usedMemoryBytesPerActiveUserBeyondSources: per(
        online.usedMemory - sources.usedMemory - (sourceBytes(online) - sourceBytes(sources)),
        n,
      ),
      usedMemoryEmpty: empty.usedMemory,
      usedMemoryOnline: online.usedMemory,
      inactiveDropped: dropped,
      badgeStatesExpired: expired,
      coreHeapBytesPerUser: per(heapPlusExternal(coreAfter) - heapPlusExternal(coreBefore), n),
      coreHeapBytesPerUserSecondHalf: per(
        heapPlusExternal(coreAfter) - heapPlusExternal(coreHalf),
        n - half,
      ),
      // The first users also bring the windows of the authors they follow (typed arrays per
      // author and per post): what the first half cost beyond the second half's per-user rate.
      coreWindowBytesEstimate: Math.round(
        heapPlusExternal(coreHalf) -
          heapPlusExternal(coreBefore) -
          ((heapPlusExternal(coreAfter) - heapPlusExternal(coreHalf)) / (n - half)) * half,
      ),
      coreHeapUsedBytesPerUser: per(coreAfter.heapUsed - coreBefore.heapUsed, n),
      coreExternalBytesPerUser: per(coreAfter.external - coreBefore.external, n),
      coreRssBytesPerUser: per(coreAfter.rss - coreBefore.rss, n),
      coreUsersHeld: report.users,
      coreBaseline: { heapUsed: coreBefore.heapUsed, rss: coreBefore.rss },
      gatewayBytesPerConn: per(gatewayAfter.rss - gatewayBefore.rss, n),
      gatewayHeapBytesPerConn: per(gatewayAfter.heapUsed - gatewayBefore.heapUsed, n),
      gatewayBaseline: { heapUsed: gatewayBefore.heapUsed, rss: gatewayBefore.rss },
      forcedGc: coreAfter.gc && gatewayAfter.gc,
      machine: { ...machineFacts(), redis: await redisVersion(admin) },
    };
  } finally {
    await Promise.all(drivers.map((d) => d.stop().catch(() => {})));
    await gateway?.stop().catch(() => {});
    await stopAll(children);
    await endpoint?.close();
    await redis.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

/** The core's latest sweep report once it holds every pool and exactly `users` users. */
async function waitHeld(
  admin: Redis,
  core: RoleProcess,
  options: MemoryOptions,
  users: number,
): Promise<SweepReport> {
  const report = await waitFor(
    async () => {
      if (core.exit) throw new Error(`the core exited (${exitText(core.exit)}):\n${core.tail()}`);
      const reports = Object.values(await admin.hgetall(`${KEY_PREFIX}:{g}:sweeps`)).map(
        (json) => JSON.parse(json) as SweepReport,
      );
      return reports.find((r) => r.pools === options.pools && r.users === users) ?? null;
    },
    {
      timeoutMs: options.waitSeconds * 1000,
      intervalMs: 200,
      message: `memory: the core holds ${options.pools} pools and ${users} users`,
    },
  );
  // waitFor returns only a truthy value.
  return report!;
}

async function sumOver(
  admin: Redis,
  pools: number,
  command: 'hlen' | 'zcard',
  suffix: string,
): Promise<number> {
  let total = 0;
  for (let pool = 0; pool < pools; pool++) {
    total += await admin[command](`${KEY_PREFIX}:{p:${pool}}:${suffix}`);
  }
  return total;
}

async function redisVersion(admin: Redis): Promise<string> {
  const info = await admin.info('server');
  return /^redis_version:(\S+)/m.exec(info)?.[1] ?? 'unknown';
}

function describeRedis(s: RedisMemorySnapshot, users: number): string {
  const { total, byClass } = perUser(s, users);
  return `${total} B per user ${JSON.stringify(byClass)}, posts ${s.bytes.posts} B`;
}

function describeProcess(m: ProcessMemorySample): string {
  const mib = (b: number) => `${(b / 1048576).toFixed(1)} MiB`;
  return `rss ${mib(m.rss)}, heap ${mib(m.heapUsed)}, external ${mib(m.external)}`;
}

/** Until the store holds every one of `users`' sources (installed from the endpoint's answers). */
async function waitSourcesHeld(
  store: RedisStore,
  users: readonly string[],
  options: MemoryOptions,
): Promise<void> {
  if (!store.sources.onDemand) return;
  await waitFor(
    async () => {
      for (let i = 0; i < users.length; i += 1000) {
        const held = await store.sources.held(users.slice(i, i + 1000));
        if (held.includes(false)) return false;
      }
      return true;
    },
    {
      timeoutMs: options.waitSeconds * 1000,
      intervalMs: 250,
      message: `memory: the sources of ${users.length} users installed`,
    },
  );
}

/** Until `count` more sweeps have reported (one core). */
async function waitSweeps(admin: Redis, options: MemoryOptions, count: number): Promise<void> {
  const latest = async () =>
    Math.max(
      0,
      ...Object.values(await admin.hgetall(`${KEY_PREFIX}:{g}:sweeps`)).map(
        (json) => (JSON.parse(json) as SweepReport).at,
      ),
    );
  const from = await latest();
  await waitFor(async () => (await latest()) >= from + count * TICK_MS - TICK_MS / 2, {
    timeoutMs: options.waitSeconds * 1000,
    intervalMs: 200,
    message: `memory: ${count} more sweeps`,
  });
}
