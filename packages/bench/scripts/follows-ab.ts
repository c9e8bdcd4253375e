/**
 * Issue 36's "O(what they touch), measured before and after": follow, unfollow, the cap check,
 * a core's read of users' follows (store.feedInputs, what UserLoader does per user) and the cold
 * start (bench cold-start's own code), at 243 and 2,000 follows, for two built checkouts (their
 * dist/, e.g. a `git worktree` of the old revision with node_modules hard-linked), alternated
 * A B, B A, … in one process, each on its own redis-server.
 *
 *   npx tsx packages/bench/scripts/follows-ab.ts <root A> <root B> [pairs=3] [--no-cold-start]
 */
import { startRedisServer } from '@bubble/test-utils';

const args = process.argv.slice(2);
const [rootA, rootB, pairsArg = '3'] = args.filter((a) => !a.startsWith('--'));
const coldStart = !args.includes('--no-cold-start');
if (!rootA || !rootB) throw new Error('usage: follows-ab.ts <root A> <root B> [pairs]');

const FOLLOW_COUNTS = [243, 2000];
const USERS = { 243: 200, 2000: 100 } as Record<number, number>;
const AUTHORS = 50_000;

/* eslint-disable @typescript-eslint/no-explicit-any */
async function modules(root: string) {
  const load = (pkg: string) => import(`${root}/packages/${pkg}/dist/index.js`) as Promise<any>;
  return {
    store: await load('store'),
    badges: await load('badges'),
    protocol: await load('protocol'),
    bench: await load('bench'),
  };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? NaN;
}

function p99(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(0.99 * s.length) - 1)] ?? NaN;
}

const round = (x: number) => Math.round(x * 10) / 10;

async function micro(root: string): Promise<Record<string, number>> {
  const m = await modules(root);
  const redis = await startRedisServer();
  const store = new m.store.RedisStore({ url: redis.url, keyPrefix: 'ab', pools: 100 });
  const service = new m.badges.BadgeService(
    store,
    new m.protocol.ManualClock(Date.UTC(2026, 10, 30)),
    {
      followCap: 2000,
    },
  );
  const figures: Record<string, number> = {};
  try {
    for (const follows of FOLLOW_COUNTS) {
      const users = Array.from({ length: USERS[follows]! }, (_, i) => `u${follows}-${i}`);
      for (const [i, user] of users.entries()) {
        const authors = Array.from(
          { length: follows },
          (_, k) => `a${(i * 7919 + k * 13) % AUTHORS}`,
        );
        await service.replaceFollows(user, authors);
      }
      const followUs: number[] = [];
      const unfollowUs: number[] = [];
      const capUs: number[] = [];
      // Round 0 warms the code paths up and is not counted.
      for (let r = 0; r < 4; r++) {
        const timed = r > 0;
        for (const user of users) {
          const t0 = performance.now();
          if (follows >= 2000) {
            // At the cap: the follow is refused after the cap check.
            await service.follow(user, 'znew').catch(() => {});
            if (timed) capUs.push((performance.now() - t0) * 1000);
            continue;
          }
          await service.follow(user, 'znew');
          const t1 = performance.now();
          await service.unfollow(user, 'znew');
          const t2 = performance.now();
          if (!timed) continue;
          followUs.push((t1 - t0) * 1000);
          unfollowUs.push((t2 - t1) * 1000);
        }
      }
      if (follows >= 2000) {
        // Unfollow and follow back of a followed author: the set stays at the cap.
        for (const [i, user] of users.entries()) {
          const author = `a${(i * 7919) % AUTHORS}`;
          const t0 = performance.now();
          await service.unfollow(user, author);
          const t1 = performance.now();
          await service.follow(user, author);
          const t2 = performance.now();
          unfollowUs.push((t1 - t0) * 1000);
          followUs.push((t2 - t1) * 1000);
        }
        figures[`capRefusalP50Us_${follows}`] = round(median(capUs));
      }
      figures[`followP50Us_${follows}`] = round(median(followUs));
      figures[`followP99Us_${follows}`] = round(p99(followUs));
      figures[`unfollowP50Us_${follows}`] = round(median(unfollowUs));
      const loads: number[] = [];
      for (let r = 0; r < 8; r++) {
        const t0 = performance.now();
        await Promise.all(users.map((user) => store.feedInputs(user)));
        if (r > 0) loads.push(((performance.now() - t0) * 1000) / users.length);
      }
      figures[`loadUsPerUser_${follows}`] = round(median(loads));
    }
    return figures;
  } finally {
    await store.close();
    await redis.stop();
  }
}

async function cold(root: string): Promise<Record<string, number>> {
  const m = await modules(root);
  const figures: Record<string, number> = {};
  for (const follows of FOLLOW_COUNTS) {
    const r = await m.bench.benchColdStart({ follows });
    figures[`coldStartP50Ms_${follows}`] = r.coldStartP50Ms;
    figures[`coldStartP99Ms_${follows}`] = r.coldStartP99Ms;
  }
  return figures;
}

const pairs = Number(pairsArg);
const results: Record<string, Record<string, number>[]> = { [rootA]: [], [rootB]: [] };
for (let pair = 0; pair < pairs; pair++) {
  const order = pair % 2 === 0 ? [rootA, rootB] : [rootB, rootA];
  for (const root of order) {
    const figures = { ...(await micro(root)), ...(coldStart ? await cold(root) : {}) };
    results[root]!.push(figures);
    process.stderr.write(`pair ${pair + 1} ${root}: ${JSON.stringify(figures)}\n`);
  }
}
process.stdout.write(`${JSON.stringify(results)}\n`);
