import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { DAY_MS, HOUR_MS, mulberry32, poolOf } from '@bubble/protocol';
import { DigestPass } from '@bubble/events';
import { RedisKeys } from '@bubble/store';
import type { RoleProcess } from '@bubble/test-utils';
import type { Redis } from 'ioredis';
import type { BenchOptions } from './bench-options.js';
import { startBenchRedis } from './bench-redis.js';
import { LivePosts } from './live-posts.js';
import {
  KEY_PREFIX,
  benchSecrets,
  cpuShares,
  cpuSnapshot,
  machineFacts,
  round2,
  sleep,
  startProfiledGateway,
  storePostsAndCursors,
} from './live-stack.js';
import { redisCpuSeconds } from './redis-probe.js';
import { WebhookReceiver } from './webhook-receiver.js';
import { buildWorkload, drawFollows, followCount, type Workload } from './workload.js';

export interface DigestOptions extends BenchOptions {
  /** Offline users, every one seen within `days` (their last sight spread over it). */
  users: number;
  authors: number;
  /** Posts already in the authors' windows, spread over the lookback. */
  windowPosts: number;
  followMedian: number;
  followCap: number;
  postsPerSec: number;
  /** Gateways sharing the pass (each with its senders). */
  gateways: number;
  /** BUBBLE_DIGEST_DAYS, BUBBLE_DIGEST_INTERVAL_MS; BUBBLE_DIGEST_RATE (its default if unset). */
  days: number;
  intervalMs: number;
  rate: number | undefined;
  /** Posts alone, before the gateway starts: the Redis CPU that is not the digest's. */
  baselineSeconds: number;
  warmupSeconds: number;
  seconds: number;
  pools: number;
  seed: number;
  profileDir: string | undefined;
}

export const DIGEST_DEFAULTS: DigestOptions = {
  users: 1_000_000,
  authors: 50_000,
  windowPosts: 400_000,
  followMedian: 150,
  followCap: 2000,
  postsPerSec: 1000,
  gateways: 1,
  days: 3,
  intervalMs: 900_000,
  rate: undefined,
  baselineSeconds: 15,
  warmupSeconds: 20,
  seconds: 120,
  pools: 100,
  seed: 37,
  profileDir: undefined,
  log: () => {},
};

/** Users written per pipeline while seeding. */
const SEED_BATCH = 5_000;

/**
 * bench.md "digest": `users` offline users, each seen within `days` (a last sight, their badge
 * state computed then, power-law follows), posts at `postsPerSec` by authors drawn by the same
 * power law; one `bubble gateway` with `feed` in BUBBLE_WEBHOOK_SOURCES runs the feed digest and
 * delivers to a receiver in this process. Measured over `seconds` after `warmupSeconds`: users
 * the digest looked at per second, deliveries per second, Redis CPU (INFO cpu) per digest user
 * beyond what the posts alone cost (measured first, without the gateway), and lagSeconds: how far
 * the shared pass is behind its schedule (the oldest user past their interval), sampled every
 * second. A pass of 1M users lasts the interval (15 min): the run sees part of one, so the
 * rate it needs (users ÷ interval) is reported beside the rate it reached.
 */
export async function benchDigest(partial: Partial<DigestOptions> = {}) {
  const options = { ...DIGEST_DEFAULTS, ...partial };
  const { log } = options;
  const stamp = `${Date.now()}-digest`;
  const redis = await startBenchRedis({ pools: options.pools, followCap: options.followCap });
  const { store, service, admin } = redis;
  const keys = new RedisKeys(KEY_PREFIX, options.pools);
  const workload = buildWorkload({
    seed: options.seed,
    users: 0,
    authors: options.authors,
    follows: { fixed: 0 },
    windowPosts: options.windowPosts,
    now: Date.now(),
  });
  const secret = randomBytes(32).toString('base64url');
  const receiver = new WebhookReceiver(secret, 0, mulberry32(options.seed ^ 7));
  const posts = new LivePosts(service, workload, {
    perSecond: options.postsPerSec,
    pacing: 'steady',
    idPrefix: 'live',
    label: 'digest',
    log,
  });
  const gateways: RoleProcess[] = [];
  try {
    await storePostsAndCursors(store, service, workload);
    log(`digest: ${workload.posts.length} window posts of ${options.authors} authors stored`);
    const seeded = await seedUsers(admin, keys, workload, options);
    log(
      `digest: ${options.users} users seen within ${options.days} days seeded ` +
        `(${seeded.follows} follows, ${seeded.seconds.toFixed(1)} s)`,
    );

    posts.start();
    await sleep(2_000);
    const baseline = await redisCpuOver(admin, options.baselineSeconds);
    log(`digest: posts alone cost Redis ${round2(baseline * 100)} % of a core`);

    const url = await receiver.listen();
    for (let g = 0; g < options.gateways; g++) {
      gateways.push(
        await startProfiledGateway(redis.url, benchSecrets(), options, `${stamp}-${g}`, {
          env: {
            BUBBLE_WEBHOOK_URL: url,
            BUBBLE_WEBHOOK_SECRET: secret,
            BUBBLE_WEBHOOK_SOURCES: 'feed',
            BUBBLE_WEBHOOK_CONCURRENCY: '16',
            BUBBLE_DIGEST_DAYS: String(options.days),
            BUBBLE_DIGEST_INTERVAL_MS: String(options.intervalMs),
            ...(options.rate !== undefined && { BUBBLE_DIGEST_RATE: String(options.rate) }),
          },
        }),
      );
    }
    const pids = Object.fromEntries([
      ...gateways.map((gateway, g) => [`gateway${g}`, gateway.pid] as const),
      ['bench', process.pid] as const,
    ]);
    const pass = new DigestPass(admin, keys);
    const taken = new PassCounter(admin, keys);
    await sleep(options.warmupSeconds * 1000);

    const before = {
      cpu: await cpuSnapshot(pids),
      redis: await redisCpuSeconds(admin),
      users: await taken.read(),
      deliveries: receiver.totals().userDeliveries,
      posts: posts.sent,
    };
    let lagMs = 0;
    const endsAt = performance.now() + options.seconds * 1000;
    while (performance.now() < endsAt) {
      await sleep(1_000);
      lagMs = Math.max(lagMs, await pass.lagMs(Date.now(), options.intervalMs));
      await taken.read();
    }
    const after = {
      cpu: await cpuSnapshot(pids),
      redis: await redisCpuSeconds(admin),
      users: await taken.read(),
      deliveries: receiver.totals().userDeliveries,
      posts: posts.sent,
    };
    const wall = (after.cpu.at - before.cpu.at) / 1000;
    const users = after.users - before.users;
    const redisSeconds = after.redis - before.redis;
    const digestUsersPerSec = users / wall;
    const neededPerSec = options.users / (options.intervalMs / 1000);
    const shares = cpuShares(before.cpu, after.cpu);
    const totals = receiver.totals();
    const gatewayShare = gateways.reduce((sum, _, g) => sum + (shares[`gateway${g}`] ?? 0), 0);
    return {
      scenario: 'digest',
      users: options.users,
      intervalMs: options.intervalMs,
      rate: options.rate ?? 'default',
      digestUsersPerSec: round2(digestUsersPerSec),
      neededUsersPerSec: round2(neededPerSec),
      redisUsPerDigestUser:
        users > 0 ? round2(((redisSeconds - baseline * wall) * 1e6) / users) : null,
      redisUsPerDigestUserRaw: users > 0 ? round2((redisSeconds * 1e6) / users) : null,
      deliveriesPerSec: round2((after.deliveries - before.deliveries) / wall),
      lagSeconds: round2(lagMs / 1000),
      postsPerSec: round2((after.posts - before.posts) / wall),
      redisCpuShare: round2(redisSeconds / wall),
      redisCpuShareOfPosts: round2(baseline),
      gateways: options.gateways,
      gatewayCpuShare: round2(gatewayShare),
      gatewayCpuUsPerDigestUser: users > 0 ? round2((gatewayShare * wall * 1e6) / users) : null,
      // Users made due and not yet sent: growing, the sender is what holds the digest back.
      queuedAtEnd: await admin.zcard(keys.webhook('due')),
      seedSeconds: round2(seeded.seconds),
      follows: seeded.follows,
      receiverFaults: totals.faults,
      seconds: round2(wall),
      ...machineFacts(),
      loadAverage: os.loadavg().map(round2),
    };
  } finally {
    await posts.stop();
    for (const gateway of gateways) await gateway.stop();
    await receiver.close();
    await redis.stop();
  }
}

/** Redis CPU (share of one core) over `seconds` of what runs now. */
async function redisCpuOver(admin: Redis, seconds: number): Promise<number> {
  const started = performance.now();
  const before = await redisCpuSeconds(admin);
  await sleep(seconds * 1000);
  const after = await redisCpuSeconds(admin);
  return (after - before) / ((performance.now() - started) / 1000);
}

/** Users handed by the shared pass since the first read, across passes (taken resets). */
class PassCounter {
  private total = 0;
  private last = 0;

  constructor(
    private readonly admin: Redis,
    private readonly keys: RedisKeys,
  ) {}

  async read(): Promise<number> {
    const taken = Number((await this.admin.hget(this.keys.digestPass(), 'taken')) ?? 0);
    this.total += taken >= this.last ? taken - this.last : taken;
    this.last = taken;
    return this.total;
  }
}

/**
 * Each user's follow list (the v2 string), their last sight within the window, and the badge
 * state computed then (feed 0, as a user who had read everything): written in pipelines of
 * SEED_BATCH users, nothing kept in memory but the batch.
 */
async function seedUsers(
  admin: Redis,
  keys: RedisKeys,
  workload: Workload,
  options: DigestOptions,
): Promise<{ follows: number; seconds: number }> {
  const started = performance.now();
  const random = mulberry32(options.seed ^ 0x9e3779b9);
  const scratch = new Uint8Array(options.authors);
  const shape = { median: options.followMedian, cap: options.followCap };
  const now = Date.now();
  // A sight is recorded at most hourly: the newest is an hour old at most.
  const spreadMs = options.days * DAY_MS - HOUR_MS;
  let follows = 0;
  for (let first = 0; first < options.users; first += SEED_BATCH) {
    const pipeline = admin.pipeline();
    const sights: Array<number | string> = [];
    const states = new Map<number, string[]>();
    for (let u = first; u < Math.min(first + SEED_BATCH, options.users); u++) {
      const user = `u${u}`;
      const want = Math.min(followCount(shape, random), options.authors);
      const list = drawFollows(want, workload.authorRank, random, scratch);
      follows += list.length;
      pipeline.set(keys.follows(user), Array.from(list, (a) => workload.authors[a]!).join(','));
      const seenAt = now - HOUR_MS - Math.floor(random() * spreadMs);
      sights.push(seenAt, user);
      const pool = poolOf(user, options.pools);
      let state = states.get(pool);
      if (!state) states.set(pool, (state = []));
      state.push(user, `bench|1|${seenAt}|`);
    }
    pipeline.zadd(keys.lastSeen(), ...sights);
    for (const [pool, fields] of states) pipeline.hset(keys.badges(pool), ...fields);
    await pipeline.exec();
    if ((first / SEED_BATCH) % 20 === 19) {
      options.log(`digest: ${first + SEED_BATCH} users seeded`);
    }
  }
  return { follows, seconds: (performance.now() - started) / 1000 };
}
