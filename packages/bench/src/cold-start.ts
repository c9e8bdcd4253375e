import { BadgeService } from '@bubble/badges';
import { ManualClock } from '@bubble/protocol';
import { RedisStore } from '@bubble/store';
import { startRedisServer } from '@bubble/test-utils';
import type { AuthorSizes, BenchOptions } from './bench-options.js';
import { buildWorkload, followedAuthors, percentile } from './workload.js';

export interface ColdStartOptions extends AuthorSizes, BenchOptions {
  /** Users measured, each following `follows` authors. */
  users: number;
  follows: number;
  /** Cold starts timed per user (after one untimed warm-up). */
  repeats: number;
}

export const COLD_START_DEFAULTS: ColdStartOptions = {
  users: 50,
  follows: 2000,
  authors: 50_000,
  windowPosts: 500_000,
  repeats: 10,
  seed: 7,
  log: () => {},
};

const NOW = Date.UTC(2026, 10, 30);

/**
 * One user's badge computed on demand from Redis (BadgeService.badge: follows and cursor in one
 * batch, one ZCOUNT per followee auto-pipelined into one write, then the badge state script),
 * for users following 2,000 authors of a power-law workload. Timed end to end, one at a time.
 */
export async function benchColdStart(partial: Partial<ColdStartOptions> = {}) {
  const options = { ...COLD_START_DEFAULTS, ...partial };
  const redis = await startRedisServer();
  const store = new RedisStore({ url: redis.url, keyPrefix: 'bench', pools: 100 });
  try {
    const clock = new ManualClock(NOW);
    const service = new BadgeService(store, clock, { followCap: 2000 });
    const workload = buildWorkload({
      seed: options.seed,
      users: options.users,
      authors: options.authors,
      follows: { fixed: options.follows },
      windowPosts: options.windowPosts,
      now: NOW,
    });
    options.log(`cold-start: loading ${options.windowPosts} posts and ${options.users} users`);
    for (let i = 0; i < workload.posts.length; i += 1000) {
      await service.ingestPosts(
        workload.posts
          .slice(i, i + 1000)
          .map((p) => ({ author: workload.authors[p.author]!, id: p.id, ts: p.ts })),
      );
    }
    for (let u = 0; u < workload.users.length; u++) {
      const user = workload.users[u]!;
      await service.replaceFollows(user, followedAuthors(workload, u));
      const readAt = workload.readAt[u];
      if (readAt !== null && readAt !== undefined)
        await store.cursors.advanceFeedReadAt(user, readAt);
    }
    const times: number[] = [];
    let sink = 0;
    for (const user of workload.users) {
      sink += (await service.badge(user)).feed;
      for (let r = 0; r < options.repeats; r++) {
        clock.advance(1);
        const started = performance.now();
        sink += (await service.badge(user)).feed;
        times.push(performance.now() - started);
      }
    }
    if (sink < 0) throw new Error('unreachable');
    times.sort((a, b) => a - b);
    return {
      scenario: 'cold-start',
      follows: options.follows,
      samples: times.length,
      coldStartP50Ms: round2(percentile(times, 50)),
      coldStartP99Ms: round2(percentile(times, 99)),
      coldStartMaxMs: round2(times[times.length - 1] ?? 0),
    };
  } finally {
    await store.close();
    await redis.stop();
  }
}

function round2(x: number): number {
  return Math.round(x * 100) / 100;
}
