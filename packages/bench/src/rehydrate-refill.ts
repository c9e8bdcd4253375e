import os from 'node:os';
import { BadgeService } from '@bubble/badges';
import { DAY_MS, HOUR_MS, systemClock, type SweepReport } from '@bubble/protocol';
import { RedisKeys, RedisStore } from '@bubble/store';
import {
  exitText,
  restartRedisServer,
  startRedisServer,
  waitFor,
  type RedisServerHandle,
  type RoleProcess,
} from '@bubble/test-utils';
import { Redis } from 'ioredis';
import { startBenchSources, workloadGraph } from './bench-sources.js';
import { processCpuSeconds, spawnRole, stopAll } from './children.js';
import { ExactBadges } from './exact-badges.js';
import { FeedDefinition } from './feed-definition.js';
import { cpuProfileArgs, KEY_PREFIX, roleEnv, round2 } from './live-stack.js';
import { logProfiles } from './profile-summary.js';
import { buildScenarioWorkload, type ScenarioWorkloadOptions, type Workload } from './workload.js';

export interface RehydrateRefillOptions extends ScenarioWorkloadOptions {
  pools: number;
  tickMs: number;
  /**
   * BUBBLE_LEASE_MS of the children: the default (10 s). A core meeting 100k users at once (its
   * first load, and again after the loss) loads them in slices that keep its heartbeats going;
   * before they did, it needed 60 s here (docs/benchmarks-history.md, "rehydrate").
   */
  leaseMs: number;
  /** Bound on each wait (the first load, the refill). */
  waitSeconds: number;
  /** How often the stored badges are looked at while waiting. */
  pollMs: number;
  /** With a directory: the core runs under `node --cpu-prof` writing there. */
  profileDir?: string | undefined;
}

export const REHYDRATE_REFILL_DEFAULTS: RehydrateRefillOptions = {
  users: 100_000,
  authors: 50_000,
  windowPosts: 400_000,
  followMedian: 150,
  followCap: 2000,
  pools: 100,
  tickMs: 1000,
  leaseMs: 10_000,
  waitSeconds: 600,
  pollMs: 250,
  seed: 7,
  log: () => {},
};

const PRESENCE_TTL_MS = 6 * HOUR_MS;
/** The posts span 6 of the 7 days of lookback, so none ages out of a badge during a run. */
const POSTS_SPAN_MS = 6 * DAY_MS;
const LOOKBACK_MS = 7 * DAY_MS;
const STUCK_MS = 90_000;

/**
 * bench.md "rehydrate", second part: `users` online (presence, no sockets) held by one
 * `bubble core` child (and a `bubble server`), their follows only in the platform's endpoint
 * (the bench's, answering from the workload's graph with each user's read cursor as `readAt`).
 * The store then loses its data: kill -9 of redis-server and an empty one on the same port.
 * The bench, as the platform, feeds the posts again, then the presence, never the follows. The
 * refill is over when every online user's stored badge state equals the definition with the
 * endpoint's graph, and the store holds their sources. Timed both from the restart and from
 * the end of the re-feed; the first load (a core meeting users it never held) is timed too.
 */
export async function measureRehydrateRefill(partial: Partial<RehydrateRefillOptions> = {}) {
  const options = { ...REHYDRATE_REFILL_DEFAULTS, ...partial };
  const { log } = options;
  const workload = buildScenarioWorkload('rehydrate', options, { lookbackMs: POSTS_SPAN_MS });
  const now = Date.now();
  const definition = new FeedDefinition(workload, LOOKBACK_MS);
  const expected = Int32Array.from(workload.users, (_, u) =>
    definition.feedOf(workload.follows[u]!, workload.readAt[u] ?? null, now),
  );
  let edges = 0;
  for (const follows of workload.follows) edges += follows.length;
  const sources = await startBenchSources(workloadGraph(workload, { readAt: true }));
  let redis: RedisServerHandle = await startRedisServer();
  const store = new RedisStore({
    url: redis.url,
    keyPrefix: KEY_PREFIX,
    pools: options.pools,
    sourcesOnDemand: true,
  });
  const service = new BadgeService(store, systemClock, { followCap: options.followCap });
  const admin = new Redis(redis.url);
  const keys = new RedisKeys(KEY_PREFIX, options.pools);
  const children: RoleProcess[] = [];
  const stamp = `rehydrate-${Date.now()}`;
  try {
    const firstFeed = await feedPlatform(store, service, workload, log);
    const env = {
      ...roleEnv(redis.url, options.pools),
      ...sources.env,
      BUBBLE_TICK: String(options.tickMs),
      BUBBLE_LEASE_MS: String(options.leaseMs),
    };
    children.push(await spawnRole({ role: 'server', env, log }));
    const coreStarted = performance.now();
    const core = await spawnRole({
      role: 'core',
      env,
      nodeArgs: await cpuProfileArgs(options.profileDir, `${stamp}-core`),
      log,
    });
    children.push(core);
    const firstWatch = new ExactBadges(admin, keys, workload.users, expected);
    await untilExact(firstWatch, core, admin, options, 'the first load');
    const firstLoadSeconds = (performance.now() - coreStarted) / 1000;
    log(
      `rehydrate: the first load of ${options.users} users exact in ${firstLoadSeconds.toFixed(1)} s`,
    );

    log('rehydrate: kill -9 of redis-server, an empty one on the same port');
    const cpuBefore = await cpuOf(core.pid);
    redis = await restartRedisServer(redis);
    const restarted = performance.now();
    const refeed = await feedPlatform(store, service, workload, log);
    const refed = performance.now();
    const watch = new ExactBadges(admin, keys, workload.users, expected);
    const reheld = heldAgain(admin, options, restarted);
    await untilExact(watch, core, admin, options, 'the refill');
    const exactAt = performance.now();
    const cpuAfter = await cpuOf(core.pid);
    const check = await watch.verify();
    if (check.notExact > 0) {
      throw new Error(
        `rehydrate: ${check.notExact} users not exact on the final check:\n${check.examples.join('\n')}`,
      );
    }
    const refillSeconds = (exactAt - refed) / 1000;
    const figures: Record<string, unknown> = {
      users: options.users,
      pools: options.pools,
      tickMs: options.tickMs,
      leaseMs: options.leaseMs,
      meanFollows: round2(edges / options.users),
      windowPosts: options.windowPosts,
      [`refillSeconds_${sizeLabel(options.users)}`]: round2(refillSeconds),
      refillUsersPerSec: Math.round(options.users / refillSeconds),
      refillSecondsFromRestart: round2((exactAt - restarted) / 1000),
      refillUsersPerSecFromRestart: Math.round((options.users * 1000) / (exactAt - restarted)),
      refeedSeconds: { posts: refeed.postsSeconds, presence: refeed.presenceSeconds },
      coreHeldAgainSeconds: await reheld,
      firstLoadSeconds: round2(firstLoadSeconds),
      coreCpuSecondsInRefill: round2(cpuAfter - cpuBefore),
      endpointMaxInFlight: sources.endpoint.maxInFlight,
      firstFeedSeconds: firstFeed,
      loadAverage1m: round2(os.loadavg()[0]!),
    };
    if (options.profileDir) {
      await stopAll(children.splice(0));
      figures.profiles = await logProfiles(options.profileDir, stamp, log);
    }
    return figures;
  } finally {
    await stopAll(children);
    await sources.close();
    admin.disconnect();
    await store.close();
    await redis.stop();
  }
}

/** The platform feeds what bubble keeps: every post, then every user's presence (no follows). */
async function feedPlatform(
  store: RedisStore,
  service: BadgeService,
  workload: Workload,
  log: (line: string) => void,
) {
  const started = performance.now();
  for (let i = 0; i < workload.posts.length; i += 5000) {
    const batch = workload.posts
      .slice(i, i + 5000)
      .map((p) => ({ author: workload.authors[p.author]!, id: p.id, ts: p.ts }));
    await retried(() => service.ingestPosts(batch));
  }
  const posted = performance.now();
  for (let i = 0; i < workload.users.length; i += 5000) {
    const batch = workload.users
      .slice(i, i + 5000)
      .map((user) => ({ user, ttlMs: PRESENCE_TTL_MS }));
    await retried(() => store.presence.setOnline(batch));
  }
  const done = performance.now();
  const figures = {
    postsSeconds: round2((posted - started) / 1000),
    presenceSeconds: round2((done - posted) / 1000),
  };
  log(
    `rehydrate: ${workload.posts.length} posts and ${workload.users.length} presences fed (${JSON.stringify(figures)})`,
  );
  return figures;
}

/**
 * Polls until every user is exact. Ends at once, with the reason, when the core exited or has
 * held every pool with fewer users than are online for `STUCK_MS`: a sweep whose load of a
 * pool's users failed leaves them unloaded for good (docs/benchmarks-history.md, "rehydrate").
 */
async function untilExact(
  watch: ExactBadges,
  core: RoleProcess,
  admin: Redis,
  options: RehydrateRefillOptions,
  label: string,
): Promise<void> {
  let lastLog = performance.now();
  let fatal: Error | undefined;
  let shortSince: number | undefined;
  await waitFor(
    async () => {
      if (core.exit) {
        fatal = new Error(`the core exited (${exitText(core.exit)}):\n${core.tail()}`);
        return true;
      }
      const report = await latestReport(admin);
      const short = report?.pools === options.pools && report.users < options.users;
      shortSince = short ? (shortSince ?? performance.now()) : undefined;
      if (shortSince !== undefined && performance.now() - shortSince > STUCK_MS) {
        fatal = new Error(
          `rehydrate: ${label}: the core has held every pool with ${report!.users} of ` +
            `${options.users} online users for ${STUCK_MS / 1000} s: a load failed`,
        );
        return true;
      }
      const pending = await watch.poll();
      if (performance.now() - lastLog > 5000) {
        lastLog = performance.now();
        options.log(`rehydrate: ${label}: ${pending} users not exact yet`);
      }
      return pending === 0;
    },
    {
      timeoutMs: options.waitSeconds * 1000,
      intervalMs: options.pollMs,
      message: `rehydrate: ${label}: every online user's badge exact`,
    },
  );
  if (fatal) throw fatal;
}

async function latestReport(admin: Redis): Promise<SweepReport | undefined> {
  const reports = Object.values(await admin.hgetall(`${KEY_PREFIX}:{g}:sweeps`)).map(
    (json) => JSON.parse(json) as SweepReport,
  );
  return reports.sort((a, b) => b.at - a.at)[0];
}

/** Seconds from `since` until the core reports holding every pool and every user again. */
async function heldAgain(
  admin: Redis,
  options: RehydrateRefillOptions,
  since: number,
): Promise<number | null> {
  try {
    await waitFor(
      async () =>
        Object.values(await admin.hgetall(`${KEY_PREFIX}:{g}:sweeps`)).some((json) => {
          const report = JSON.parse(json) as SweepReport;
          return report.pools === options.pools && report.users === options.users;
        }),
      { timeoutMs: options.waitSeconds * 1000, intervalMs: 100, message: 'held again' },
    );
    return round2((performance.now() - since) / 1000);
  } catch {
    return null;
  }
}

/**
 * A platform's call retried while the store's client reconnects to the restarted server (its
 * commands fail meanwhile); every call here is idempotent.
 */
async function retried<T>(call: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (err) {
      if (attempt >= 50) throw err;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

/** 100000 → "100k" (bench.md's key), 300 → "300". */
function sizeLabel(users: number): string {
  return users % 1000 === 0 ? `${users / 1000}k` : String(users);
}

async function cpuOf(pid: number): Promise<number> {
  return (await processCpuSeconds(pid)) ?? Number.NaN;
}
