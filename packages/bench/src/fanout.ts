import { CoreNode, type CoreNodeOptions } from '@bubble/core';
import { BadgeService } from '@bubble/badges';
import { HOUR_MS, systemClock } from '@bubble/protocol';
import { MemoryPoolLocks, RedisStore, type Post } from '@bubble/store';
import { startRedisServer } from '@bubble/test-utils';
import { Redis } from 'ioredis';
import { storePostsAndCursors } from './live-stack.js';
import {
  callsBetween,
  commandCalls,
  CommandTally,
  countCommands,
  redisCpuSeconds,
  sum,
  writeCommands,
} from './redis-probe.js';
import {
  buildScenarioWorkload,
  SCENARIO_WORKLOAD_DEFAULTS,
  followedAuthors,
  type Workload,
  type ScenarioWorkloadOptions,
} from './workload.js';

export interface FanoutOptions extends ScenarioWorkloadOptions {
  pools: number;
  /** Posts measured, authors drawn by activity; the 1M-follower author's post comes on top. */
  posts: number;
  megaFollowers: number;
  /** Posts per ingest call in the batched runs. */
  batch: number;
  /** Bound on each traditional run over the posts. */
  traditionalSeconds: number;
  /** Bound on the in-process core loading its users. */
  loadSeconds: number;
}

export const FANOUT_DEFAULTS: FanoutOptions = {
  ...SCENARIO_WORKLOAD_DEFAULTS,
  pools: 100,
  posts: 1000,
  megaFollowers: 1_000_000,
  batch: 100,
  traditionalSeconds: 240,
  loadSeconds: 300,
};

const KEY_PREFIX = 'ub';
const MEGA = 'mega';
const CORE_ID = 'bench-core';
/** Users brought online per core sweep while loading. */
const ONLINE_BATCH = 2000;
/** Members per SADD, and commands per pipeline of the traditional fan-out. */
const CHUNK = 10_000;

/**
 * The traditional design at its fastest: one script call per post walks the author's followers
 * inside Redis and increments each one's counter (no per-follower round trip, no reply traffic).
 */
const FANOUT_LUA = `
local followers = redis.call('SMEMBERS', KEYS[1])
for i = 1, #followers do
  redis.call('HINCRBY', ARGV[1] .. followers[i] .. ARGV[2], 'f', 1)
end
return #followers
`;

interface TraditionalClient extends Redis {
  fanoutPost(followers: string, counterPrefix: string, counterSuffix: string): Promise<number>;
}

/** What one run cost: Redis commands (sent, and executed inside Redis) and CPU. */
interface Cost {
  posts: number;
  /** Commands the clients sent (a script call counts one). */
  sent: number;
  /** Commands redis-server executed, those run by scripts included. */
  executed: number;
  /** The executed ones that write. */
  writes: number;
  benchCpuMs: number;
  redisCpuMs: number;
  wallMs: number;
  executedByName: Record<string, number>;
}

/**
 * bench.md "fanout": the traditional design (every post increments every follower's counter)
 * against ours (a post is stored once; cores fold it into the counts of online followers and
 * write back what changed once per sweep), on the same posts of the same workload, with one
 * author followed by 1M users.
 */
export async function benchFanout(partial: Partial<FanoutOptions> = {}) {
  const options = { ...FANOUT_DEFAULTS, ...partial };
  const { log } = options;
  const workload = buildScenarioWorkload('fanout', options);
  const followers = reverseIndex(workload);
  const redis = await startRedisServer();
  const admin = new Redis(redis.url);
  const oursTally = new CommandTally();
  const tradTally = new CommandTally();
  const store = new RedisStore({ url: redis.url, keyPrefix: KEY_PREFIX, pools: options.pools });
  const coreStore = new RedisStore({
    url: redis.url,
    keyPrefix: KEY_PREFIX,
    pools: options.pools,
  });
  countCommands(store.redis as Redis, oursTally);
  countCommands(coreStore.redis as Redis, oursTally);
  const trad = new Redis(redis.url) as TraditionalClient;
  trad.defineCommand('fanoutPost', { numberOfKeys: 1, lua: FANOUT_LUA });
  countCommands(trad, tradTally);
  const service = new BadgeService(store, systemClock, { followCap: options.followCap });
  const locks = new MemoryPoolLocks();
  let core: CoreNode | undefined;
  try {
    await seed(store, service, trad, workload, followers, options);

    log('fanout: starting an in-process bubble-core over every pool');
    await coreStore.coordination.setAssignment({
      generation: 1,
      owners: Array.from({ length: options.pools }, () => CORE_ID),
    });
    const logger = benchLogger(log);
    core = new CoreNode({
      id: CORE_ID,
      store: coreStore,
      locks,
      clock: systemClock,
      logger,
      lookbackDays: 7,
      // Sweeps run only when the bench asks (sweepNow): no lease renewals or self-ticks between.
      leaseMs: 600_000,
      tickMs: 3_600_000,
    });
    await core.start();
    // Users come online in batches, each taken in by a sweep (as the sweep scenario does).
    const loadDeadline = performance.now() + options.loadSeconds * 1000;
    for (let i = 0; i < options.users; i += ONLINE_BATCH) {
      const users = workload.users
        .slice(i, i + ONLINE_BATCH)
        .map((user) => ({ user, ttlMs: 3 * HOUR_MS }));
      await store.presence.setOnline(users);
      await core.sweepNow();
      if (performance.now() > loadDeadline) {
        throw new Error(
          `the core held ${core.counter.userCount} users after ${options.loadSeconds} s`,
        );
      }
    }
    await core.sweepNow();
    if (core.counter.userCount !== options.users) {
      throw new Error(`the core holds ${core.counter.userCount} of ${options.users} users`);
    }
    log(`fanout: core holds ${core.counter.userCount} users`);

    const postAuthors = Array.from(
      { length: options.posts },
      () => workload.authors[workload.authorRank.next()]!,
    );
    const followersPerPost =
      sum(postAuthors.map((a) => followers.get(a)?.length ?? 0)) / postAuthors.length;
    const tagged = (tag: string): Post[] =>
      postAuthors.map((author, i) => ({ author, id: `${tag}${i}`, ts: Date.now() }));
    const megaPost = (tag: string): Post[] => [{ author: MEGA, id: `${tag}-mega`, ts: Date.now() }];
    const run = (posts: number, fn: () => Promise<void>) =>
      measure(admin, [oursTally, tradTally], posts, fn);

    log(`fanout: ours, one post per ingest call (${options.posts} posts)`);
    const oursSingle = await run(options.posts, async () => {
      for (const post of tagged('s')) await service.ingestPosts([post]);
    });
    const oursSingleMega = await run(1, async () => {
      await service.ingestPosts(megaPost('s'));
    });
    log(`fanout: ours, ${options.batch} posts per ingest call`);
    const oursBatch = await run(options.posts, async () => {
      const all = tagged('b');
      for (let i = 0; i < all.length; i += options.batch) {
        await service.ingestPosts(all.slice(i, i + options.batch));
      }
    });
    // The core takes in what was ingested so far, outside the measurement.
    await core.sweepNow();
    log('fanout: ours with the core: ingest, then one sweep folds the posts in and writes back');
    const withCore = await run(options.posts, async () => {
      const all = tagged('c');
      for (let i = 0; i < all.length; i += options.batch) {
        await service.ingestPosts(all.slice(i, i + options.batch));
      }
      await core!.sweepNow();
    });
    const withCoreChanged = core.lastReport?.changed ?? 0;
    const withCoreMega = await run(1, async () => {
      await service.ingestPosts(megaPost('c'));
      await core!.sweepNow();
    });
    const withCoreMegaChanged = core.lastReport?.changed ?? 0;
    logger.mute();
    await core.close();
    core = undefined;

    const followersKey = (author: string) => `trad:{a:${author}}:followers`;
    log('fanout: traditional, a script per post increments every follower inside Redis');
    let luaPosts = 0;
    const lua = await run(options.posts, async () => {
      const deadline = performance.now() + options.traditionalSeconds * 1000;
      for (const author of postAuthors) {
        if (performance.now() > deadline) break;
        await trad.fanoutPost(followersKey(author), 'lua:{u:', '}:badge');
        luaPosts++;
      }
    });
    lua.posts = luaPosts;
    const luaMega = await run(1, async () => {
      await trad.fanoutPost(followersKey(MEGA), 'lua:{u:', '}:badge');
    });
    log('fanout: traditional, SSCAN the followers and pipeline one HINCRBY each');
    let pipelinedPosts = 0;
    const pipelined = await run(options.posts, async () => {
      const deadline = performance.now() + options.traditionalSeconds * 1000;
      for (const author of postAuthors) {
        if (performance.now() > deadline) break;
        await fanoutPipelined(trad, followersKey(author), 'pipe');
        pipelinedPosts++;
      }
    });
    pipelined.posts = pipelinedPosts;
    const pipelinedMega = await run(1, () => fanoutPipelined(trad, followersKey(MEGA), 'pipe'));

    const writes = await writeCommands(
      admin,
      new Set(
        [oursSingle, oursSingleMega, oursBatch, withCore, withCoreMega, lua, luaMega, pipelined]
          .concat(pipelinedMega)
          .flatMap((c) => Object.keys(c.executedByName)),
      ),
    );
    for (const cost of [
      oursSingle,
      oursSingleMega,
      oursBatch,
      withCore,
      withCoreMega,
      lua,
      luaMega,
      pipelined,
      pipelinedMega,
    ]) {
      cost.writes = sum(
        Object.entries(cost.executedByName)
          .filter(([name]) => writes.has(name))
          .map(([, n]) => n),
      );
    }

    // The traditional variant that spent less CPU per post carries the comparison.
    const cpuPerPost = (c: Cost) => (c.benchCpuMs + c.redisCpuMs) / c.posts;
    const luaWins =
      lua.posts === options.posts &&
      (pipelined.posts < options.posts || cpuPerPost(lua) <= cpuPerPost(pipelined));
    const [traditional, traditionalMega] = luaWins ? [lua, luaMega] : [pipelined, pipelinedMega];
    const perPost = (c: Cost, n: number) => round2(n / c.posts);
    return {
      scenario: 'fanout',
      users: options.users,
      authors: options.authors,
      posts: options.posts,
      followersPerPost: Math.round(followersPerPost),
      megaFollowers: options.megaFollowers,
      redisCmdsPerPost_ours: perPost(oursSingle, oursSingle.executed),
      redisWritesPerPost_ours: perPost(oursSingle, oursSingle.writes),
      redisCmdsSentPerPost_ours: perPost(oursSingle, oursSingle.sent),
      redisCmdsPerPost_ours_mega: oursSingleMega.executed,
      redisWritesPerPost_ours_mega: oursSingleMega.writes,
      redisCmdsPerPost_ours_batched: perPost(oursBatch, oursBatch.executed),
      redisCmdsPerPost_oursWithCore: perPost(withCore, withCore.executed),
      redisWritesPerPost_oursWithCore: perPost(withCore, withCore.writes),
      redisCmdsPerPost_traditional: perPost(traditional, traditional.executed),
      redisWritesPerPost_traditional: perPost(traditional, traditional.writes),
      redisCmdsPerPost_traditional_mega: traditionalMega.executed,
      traditionalVariant: luaWins ? 'lua' : 'pipelined',
      traditionalPostsMeasured: traditional.posts,
      cpuRatio: round2(cpuPerPost(traditional) / cpuPerPost(withCore)),
      cpuRatio_ingestOnly: round2(cpuPerPost(traditional) / cpuPerPost(oursSingle)),
      cpuRatio_mega: round2(cpuPerPost(traditionalMega) / cpuPerPost(withCoreMega)),
      changedPerSweep_oursWithCore: withCoreChanged,
      changedPerSweep_oursWithCore_mega: withCoreMegaChanged,
      runs: {
        oursSingle: summary(oursSingle),
        oursSingleMega: summary(oursSingleMega),
        oursBatched: summary(oursBatch),
        oursWithCore: summary(withCore),
        oursWithCoreMega: summary(withCoreMega),
        traditionalLua: summary(lua),
        traditionalLuaMega: summary(luaMega),
        traditionalPipelined: summary(pipelined),
        traditionalPipelinedMega: summary(pipelinedMega),
      },
    };
  } finally {
    await core?.close().catch(() => {});
    await locks.close();
    await store.close().catch(() => {});
    await coreStore.close().catch(() => {});
    trad.disconnect();
    admin.disconnect();
    await redis.stop();
  }
}

/** author → indices of the users following them. */
function reverseIndex(workload: Workload): Map<string, Int32Array> {
  const counts = new Int32Array(workload.authors.length);
  for (const list of workload.follows) for (const a of list) counts[a]!++;
  const lists = Array.from(counts, (n) => new Int32Array(n));
  const filled = new Int32Array(workload.authors.length);
  workload.follows.forEach((list, u) => {
    for (const a of list) lists[a]![filled[a]!++] = u;
  });
  return new Map(lists.map((list, a) => [workload.authors[a]!, list]));
}

/**
 * Both designs' sources: follows per user (ours; the first users also follow the big author),
 * followers per author (traditional; the big author's are u0 … u999999), posts of the last 7
 * days and read cursors. Presence comes later, with the core running.
 */
async function seed(
  store: RedisStore,
  service: BadgeService,
  trad: Redis,
  workload: Workload,
  followers: Map<string, Int32Array>,
  options: FanoutOptions,
): Promise<void> {
  const { log } = options;
  const n = workload.users.length;
  for (let i = 0; i < n; i += 1000) {
    const writes: Promise<unknown>[] = [];
    for (let u = i; u < Math.min(i + 1000, n); u++) {
      const names = followedAuthors(workload, u);
      if (u < options.megaFollowers) {
        if (names.length >= options.followCap) names.pop();
        names.push(MEGA);
      }
      writes.push(store.follows.replace(workload.users[u]!, names));
    }
    await Promise.all(writes);
  }
  log(`fanout: follows of ${n} users stored`);

  let pipeline = trad.pipeline();
  let queued = 0;
  const flush = async () => {
    await pipeline.exec();
    pipeline = trad.pipeline();
    queued = 0;
  };
  for (const [author, list] of followers) {
    for (let i = 0; i < list.length; i += CHUNK) {
      const members = Array.from(list.subarray(i, i + CHUNK), (u) => workload.users[u]!);
      pipeline.sadd(`trad:{a:${author}}:followers`, ...members);
      queued += members.length;
      if (queued >= 200_000) await flush();
    }
  }
  for (let i = 0; i < options.megaFollowers; i += CHUNK) {
    const end = Math.min(i + CHUNK, options.megaFollowers);
    const members = Array.from({ length: end - i }, (_, k) => `u${i + k}`);
    pipeline.sadd(`trad:{a:${MEGA}}:followers`, ...members);
    queued += members.length;
    if (queued >= 200_000) await flush();
  }
  await flush();
  log(
    `fanout: followers of ${followers.size + 1} authors stored (${MEGA}: ${options.megaFollowers})`,
  );

  const cursors = await storePostsAndCursors(store, service, workload);
  log(`fanout: ${workload.posts.length} window posts, ${cursors} read cursors`);
}

/**
 * The traditional design client-side: the followers in pages (SSCAN, so the 1M set never comes
 * back in one reply), a pipeline of HINCRBY per page, the next page fetched while one runs.
 */
async function fanoutPipelined(client: Redis, followersKey: string, prefix: string): Promise<void> {
  let cursor = '0';
  let inFlight: Promise<unknown> | undefined;
  do {
    const [next, members] = await client.sscan(followersKey, cursor, 'COUNT', CHUNK);
    cursor = next;
    await inFlight;
    const pipeline = client.pipeline();
    for (const user of members) pipeline.hincrby(`${prefix}:{u:${user}}:badge`, 'f', 1);
    inFlight = pipeline.exec();
  } while (cursor !== '0');
  await inFlight;
}

async function measure(
  admin: Redis,
  tallies: CommandTally[],
  posts: number,
  fn: () => Promise<void>,
): Promise<Cost> {
  for (const tally of tallies) tally.reset();
  const callsBefore = await commandCalls(admin);
  const redisBefore = await redisCpuSeconds(admin);
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  await fn();
  const wallMs = performance.now() - started;
  const cpu = process.cpuUsage(cpuBefore);
  const redisCpuMs = ((await redisCpuSeconds(admin)) - redisBefore) * 1000;
  const executed = callsBetween(callsBefore, await commandCalls(admin));
  return {
    posts,
    sent: sum(tallies.map((t) => t.total)),
    executed: sum(executed.values()),
    writes: 0,
    benchCpuMs: (cpu.user + cpu.system) / 1000,
    redisCpuMs,
    wallMs,
    executedByName: Object.fromEntries(executed),
  };
}

function summary(cost: Cost) {
  return {
    posts: cost.posts,
    sentPerPost: round2(cost.sent / cost.posts),
    executedPerPost: round2(cost.executed / cost.posts),
    writesPerPost: round2(cost.writes / cost.posts),
    benchCpuMsPerPost: round3(cost.benchCpuMs / cost.posts),
    redisCpuMsPerPost: round3(cost.redisCpuMs / cost.posts),
    wallMs: Math.round(cost.wallMs),
    executedByName: cost.executedByName,
  };
}

/** The part of a pino logger CoreNode uses; its warnings and errors go to the bench's log. */
function benchLogger(log: (line: string) => void): CoreNodeOptions['logger'] & { mute(): void } {
  let muted = false;
  const say = (level: string) => (obj: unknown, msg?: string) => {
    if (muted) return;
    const err = (obj as { err?: unknown } | undefined)?.err;
    const detail = err instanceof Error ? (err.stack ?? err.message) : JSON.stringify(obj);
    log(`fanout: core ${level}: ${msg ?? ''} ${detail}`);
  };
  const logger = {
    child: () => logger,
    trace: () => {},
    debug: () => {},
    info: () => {},
    warn: say('warn'),
    error: say('error'),
    fatal: say('fatal'),
    // CoreNode warns "pool lease lost" for every pool it releases on close.
    mute: () => {
      muted = true;
    },
  };
  return logger as unknown as CoreNodeOptions['logger'] & { mute(): void };
}

function round2(x: number): number {
  return Math.round(x * 100) / 100;
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}
