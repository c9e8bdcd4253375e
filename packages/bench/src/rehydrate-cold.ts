import { BadgeService, DEFAULT_RULES } from '@bubble/badges';
import { SourcesClient } from '@bubble/events';
import { DAY_MS, ManualClock, mulberry32, poolOf } from '@bubble/protocol';
import type { SourcesGraphEntry } from '@bubble/test-utils';
import { RedisKeys, RedisStore } from '@bubble/store';
import { startRedisServer } from '@bubble/test-utils';
import { Redis } from 'ioredis';
import type { AuthorSizes, BenchOptions } from './bench-options.js';
import { startBenchSources } from './bench-sources.js';
import { round2 } from './live-stack.js';
import { FeedDefinition } from './feed-definition.js';
import { buildWorkload, drawFollows, percentile, ZipfSampler } from './workload.js';

export interface RehydrateColdOptions extends AuthorSizes, BenchOptions {
  /** Users of each kind (held, dropped) at each follow count. */
  usersPerKind: number;
  followCounts: readonly number[];
  /** Cold starts timed per user (after one untimed warm-up). */
  repeats: number;
}

export const REHYDRATE_COLD_DEFAULTS: RehydrateColdOptions = {
  usersPerKind: 50,
  followCounts: [243, 2000],
  authors: 50_000,
  windowPosts: 500_000,
  repeats: 10,
  seed: 7,
  log: () => {},
};

const NOW = Date.UTC(2026, 10, 30);
const LOOKBACK_MS = 7 * DAY_MS;
const PREFIX = 'bench';
const POOLS = 100;

interface ColdUser {
  user: string;
  follows: string[];
  readAt: number | null;
}

/**
 * bench.md "rehydrate", first part: the cold start of a user the lifecycle job dropped, whose
 * sources come back from the platform's endpoint (a local one answering at once, through the
 * real SourcesClient), beside the cold start of a user whose sources are held, in one process on
 * one redis-server, alternated. Both are BadgeService.serveBadge timed end to end as
 * `bench cold-start` times it. Before each timed sample of a dropped user, the keys the
 * lifecycle job drops are deleted again (marks, cursors, follows, topics, the fetch marker, the
 * badge state) and the store is asked that it no longer holds them. Every sample's feed is
 * checked against the definition with the platform's graph.
 */
export async function measureRehydrateCold(partial: Partial<RehydrateColdOptions> = {}) {
  const options = { ...REHYDRATE_COLD_DEFAULTS, ...partial };
  const { log } = options;
  const redis = await startRedisServer();
  const store = new RedisStore({
    url: redis.url,
    keyPrefix: PREFIX,
    pools: POOLS,
    sourcesOnDemand: true,
  });
  const admin = new Redis(redis.url);
  const graph = new Map<string, SourcesGraphEntry>();
  const sources = await startBenchSources(graph, { record: true });
  const caps = { follows: DEFAULT_RULES.followCap, topics: DEFAULT_RULES.topicCap };
  const client = new SourcesClient({ url: sources.endpoint.url, secret: sources.secret, caps });
  try {
    const clock = new ManualClock(NOW);
    const service = new BadgeService(
      store,
      clock,
      { followCap: caps.follows },
      { sources: client, sourcesTimeoutMs: 2000 },
    );
    const workload = buildWorkload({
      seed: options.seed,
      users: 0,
      authors: options.authors,
      follows: { fixed: 0 },
      windowPosts: options.windowPosts,
      now: NOW,
    });
    log(`rehydrate: loading ${options.windowPosts} posts`);
    for (let i = 0; i < workload.posts.length; i += 5000) {
      await service.ingestPosts(
        workload.posts
          .slice(i, i + 5000)
          .map((p) => ({ author: workload.authors[p.author]!, id: p.id, ts: p.ts })),
      );
    }
    const definition = new FeedDefinition(workload, LOOKBACK_MS);
    const random = mulberry32(options.seed ^ 0x2f6b);
    const rank = new ZipfSampler(options.authors, 0.9, random);
    const draw = (name: string, follows: number): ColdUser => ({
      user: name,
      follows: Array.from(drawFollows(follows, rank, random), (a) => workload.authors[a]!),
      readAt: random() < 0.2 ? null : NOW - Math.floor(random() * LOOKBACK_MS),
    });
    const keys = new RedisKeys(PREFIX, POOLS);
    const drop = async (user: string) => {
      const pool = poolOf(user, POOLS);
      await admin
        .pipeline()
        .del(...keys.inactiveUserKeys(user, true))
        .hdel(keys.badges(pool), user)
        .zrem(keys.offlineSince(pool), user)
        .exec();
      const [held] = await store.sources.held([user]);
      if (held !== false) throw new Error(`rehydrate: ${user} is still held after the drop`);
    };

    const figures: Record<string, number> = {};
    const mismatches: string[] = [];
    let droppedSamples = 0;
    for (const follows of options.followCounts) {
      const held = Array.from({ length: options.usersPerKind }, (_, i) =>
        draw(`h${follows}-${i}`, follows),
      );
      const dropped = Array.from({ length: options.usersPerKind }, (_, i) =>
        draw(`d${follows}-${i}`, follows),
      );
      // Held: installed as an earlier answer would have been. Dropped: only the platform has them.
      await store.sources.install(
        held.map(({ user, follows: f, readAt }) => ({
          user,
          answer: { follows: f, topics: [], ...(readAt === null ? {} : { readAt }) },
        })),
        caps,
      );
      for (const { user, follows: f, readAt } of [...held, ...dropped]) {
        graph.set(user, { follows: f, topics: [], ...(readAt === null ? {} : { readAt }) });
      }
      const sample = async (who: ColdUser, kind: 'held' | 'dropped') => {
        clock.advance(1);
        const started = performance.now();
        const served = await service.serveBadge(who.user);
        const ms = performance.now() - started;
        const expected = definition.feed(who.follows, who.readAt, clock.now());
        if (served.stale || served.badge.feed !== expected) {
          mismatches.push(
            `${kind} ${who.user}: feed ${served.badge.feed}${served.stale ? ' (stale)' : ''}, definition ${expected}`,
          );
        }
        return ms;
      };
      for (const who of held) await sample(who, 'held');
      for (const who of dropped) {
        await sample(who, 'dropped');
        await drop(who.user);
      }
      log(`rehydrate: ${follows} follows: timing ${options.repeats} rounds of both kinds`);
      const heldTimes: number[] = [];
      const droppedTimes: number[] = [];
      for (let r = 0; r < options.repeats; r++) {
        for (let i = 0; i < options.usersPerKind; i++) {
          const timeHeld = async () => heldTimes.push(await sample(held[i]!, 'held'));
          const timeDropped = async () => {
            droppedTimes.push(await sample(dropped[i]!, 'dropped'));
            droppedSamples++;
            await drop(dropped[i]!.user);
          };
          // Alternated, so a slow stretch of the machine falls on both kinds alike.
          if ((r + i) % 2 === 0) {
            await timeHeld();
            await timeDropped();
          } else {
            await timeDropped();
            await timeHeld();
          }
        }
      }
      heldTimes.sort((a, b) => a - b);
      droppedTimes.sort((a, b) => a - b);
      figures[`rehydrateColdP50Ms_${follows}`] = round2(percentile(droppedTimes, 50));
      figures[`rehydrateColdP99Ms_${follows}`] = round2(percentile(droppedTimes, 99));
      figures[`heldColdP50Ms_${follows}`] = round2(percentile(heldTimes, 50));
      figures[`heldColdP99Ms_${follows}`] = round2(percentile(heldTimes, 99));
      figures[`rehydrateRatio_${follows}`] = round2(
        percentile(droppedTimes, 99) / percentile(heldTimes, 99),
      );
      log(
        `rehydrate: ${follows} follows: dropped p50/p99 ${figures[`rehydrateColdP50Ms_${follows}`]}/` +
          `${figures[`rehydrateColdP99Ms_${follows}`]} ms, held ${figures[`heldColdP50Ms_${follows}`]}/` +
          `${figures[`heldColdP99Ms_${follows}`]} ms`,
      );
    }
    if (mismatches.length > 0) {
      throw new Error(
        `rehydrate: ${mismatches.length} cold starts differ from the definition:\n${mismatches.slice(0, 10).join('\n')}`,
      );
    }
    const requests = sources.endpoint.requests;
    const last = Math.max(...options.followCounts);
    return {
      ...figures,
      rehydrateRatio: figures[`rehydrateRatio_${last}`]!,
      samplesPerKind: options.usersPerKind * options.repeats,
      droppedSamples,
      // One request per cold start of a dropped user (the warm-ups included), one user each.
      endpointRequests: requests.length,
      endpointUsersPerRequest: round2(
        requests.reduce((sum, r) => sum + r.users.length, 0) / Math.max(1, requests.length),
      ),
    };
  } finally {
    await client.close();
    await sources.close();
    admin.disconnect();
    await store.close();
    await redis.stop();
  }
}
