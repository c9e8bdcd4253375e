import { ExtrasTracker, FeedCounter, StoredBeliefs } from '@bubble/core';
import { DAY_MS, mulberry32 } from '@bubble/protocol';
import {
  buildScenarioWorkload,
  SCENARIO_WORKLOAD_DEFAULTS,
  followedAuthors,
  percentile,
  postsByAuthor,
  ZipfSampler,
  type ScenarioWorkloadOptions,
  type Workload,
} from './workload.js';

export interface MassOfflineOptions extends ScenarioWorkloadOptions {
  /** Users of the core that go offline at once (a gateway's share dying). */
  offline: number;
  /** A tenth as many, to show how the cost grows with the number gone. */
  smallOffline: number;
  /** Times each figure is measured (the users come back online between two). */
  rounds: number;
  /** The run with topics: each user follows this many of `topicPool`, drawn by a power law. */
  topicsPerUser: number;
  topicPool: number;
}

export const MASS_OFFLINE_DEFAULTS: MassOfflineOptions = {
  ...SCENARIO_WORKLOAD_DEFAULTS,
  offline: 50_000,
  smallOffline: 5_000,
  rounds: 3,
  topicsPerUser: 5,
  topicPool: 1000,
};

export const MASS_OFFLINE_NOW = Date.UTC(2026, 10, 30);

/** The sweep's budget: the default tick, and the latency tick. */
const TICK_MS = 1000;
const FAST_TICK_MS = 100;
const POOLS = 100;

/**
 * A gateway holding `offline` of one core's 100k users dies: their presences lapse together and
 * one sweep lets them all go (pool-tenures expirePresence → StoredBeliefs.release → the counter
 * and the extras forget them), then takes the changed counts; the follower lists let them go over
 * the next sweeps (FeedCounter.reclaim, timed per sweep). In process, single thread, the
 * sweep's workload (power-law follows, median 150, capped at 2000); once without topics, once
 * with every user following 5 topics of 1,000 drawn by a power law (popular topics have tens of
 * thousands of followers).
 */
export async function benchMassOffline(partial: Partial<MassOfflineOptions> = {}) {
  const options = { ...MASS_OFFLINE_DEFAULTS, ...partial };
  const workload = buildScenarioWorkload('mass-offline', options, { now: MASS_OFFLINE_NOW });
  const plain = measureMassOffline(workload, options, false);
  const topics = measureMassOffline(workload, options, true);
  const ms = plain.bigMs;
  return {
    scenario: 'mass-offline',
    users: options.users,
    offline: options.offline,
    meanFollows: round2(
      workload.follows.reduce((sum, f) => sum + f.length, 0) / workload.follows.length,
    ),
    tickMs: TICK_MS,
    [`massOfflineMs_${label(options.offline)}`]: ms,
    [`massOfflineMs_${label(options.smallOffline)}`]: plain.smallMs,
    [`massOfflineMs_${label(options.offline)}_topics`]: topics.bigMs,
    [`massOfflineMs_${label(options.smallOffline)}_topics`]: topics.smallMs,
    usPerUserOffline: round2((ms * 1000) / options.offline),
    // 1 when letting users go costs the same per user however many go at once.
    growthRatio: round2(ms / options.offline / (plain.smallMs / options.smallOffline)),
    growthRatio_topics: round2(
      topics.bigMs / options.offline / (topics.smallMs / options.smallOffline),
    ),
    [`reclaimSweeps_${label(options.offline)}`]: plain.reclaimSweeps,
    [`reclaimMaxMsPerSweep_${label(options.offline)}`]: plain.reclaimMaxMs,
    [`reclaimTotalMs_${label(options.offline)}`]: plain.reclaimTotalMs,
    [`reclaimSweeps_${label(options.offline)}_topics`]: topics.reclaimSweeps,
    [`reclaimMaxMsPerSweep_${label(options.offline)}_topics`]: topics.reclaimMaxMs,
    [`reclaimTotalMs_${label(options.offline)}_topics`]: topics.reclaimTotalMs,
    shareOfTick: round2(Math.max(ms, topics.bigMs) / TICK_MS),
    shareOfFastTick: round2(Math.max(ms, topics.bigMs) / FAST_TICK_MS),
  };
}

function label(n: number): string {
  return n % 1000 === 0 ? `${n / 1000}k` : String(n);
}

/** The counter's class: the A/B script (scripts/mass-offline-ab.ts) passes a revision's. */
export type CounterClass = new (options: { lookbackMs: number }) => FeedCounter;

/** Median times (ms) of letting `offline` and `smallOffline` users go, over `rounds`. */
export function measureMassOffline(
  workload: Workload,
  options: MassOfflineOptions,
  withTopics: boolean,
  Counter: CounterClass = FeedCounter,
) {
  const what = withTopics ? 'with topics' : 'without topics';
  options.log(`mass-offline: loading ${options.users} users ${what}`);
  const counter = new Counter({ lookbackMs: 7 * DAY_MS });
  const extras = new ExtrasTracker();
  const beliefs = new StoredBeliefs(counter, extras, POOLS);
  counter.advanceTo(MASS_OFFLINE_NOW);
  const byAuthor = postsByAuthor(workload);
  const topicRank = new ZipfSampler(options.topicPool, 1, mulberry32(options.seed + 7));
  const topicsOf = workload.users.map(() => {
    if (!withTopics) return [];
    const chosen = new Set<string>();
    while (chosen.size < options.topicsPerUser) chosen.add(`t${topicRank.next()}`);
    return [...chosen];
  });
  const online = (u: number) => {
    const user = workload.users[u]!;
    const names = followedAuthors(workload, u);
    for (const author of counter.setUser(user, names, workload.readAt[u]!)) {
      counter.loadAuthor(author, byAuthor.get(Number(author.slice(1))) ?? []);
    }
    for (const topic of counter.setTopics(user, topicsOf[u]!)) counter.loadTopic(topic, []);
    extras.setUser(user, { seen: null, clicks: {} }, []);
    counter.recompute(user);
    beliefs.loaded(counter.users.idOf(user)!, user, null, false);
  };
  for (let u = 0; u < workload.users.length; u++) online(u);
  counter.takeChanged();

  // The users of one gateway: every user of an even index (spread over every pool and author).
  const random = mulberry32(options.seed + 11);
  const order = Int32Array.from({ length: workload.users.length }, (_, i) => i);
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  // A revision from before the deferred release (the A/B script) takes users out at once.
  const deferred = typeof (counter as Partial<FeedCounter>).reclaim === 'function';
  const release = deferred
    ? (user: string) => beliefs.release(user)
    : (user: string) => {
        counter.removeUser(user);
        extras.removeUser(user);
      };
  const reclaims: number[] = [];
  const offlineOnce = (count: number, keepReclaims: boolean): number => {
    const gone = order.subarray(0, count);
    const started = performance.now();
    for (const u of gone) release(workload.users[u]!);
    counter.takeChanged();
    const ms = performance.now() - started;
    // The next sweeps' share (core-node.ts): FeedCounter.reclaim with its default budget.
    while (deferred && counter.unreclaimedFollows > 0) {
      const reclaimStarted = performance.now();
      counter.reclaim();
      if (keepReclaims) reclaims.push(performance.now() - reclaimStarted);
    }
    for (const u of gone) online(u);
    counter.takeChanged();
    return ms;
  };
  const big: number[] = [];
  const small: number[] = [];
  for (let round = 0; round < options.rounds; round++) {
    small.push(offlineOnce(options.smallOffline, false));
    big.push(offlineOnce(options.offline, round === 0));
    options.log(
      `mass-offline ${what}: ${options.offline} users offline in ${round2(big.at(-1)!)} ms, ` +
        `${options.smallOffline} in ${round2(small.at(-1)!)} ms`,
    );
  }
  big.sort((a, b) => a - b);
  small.sort((a, b) => a - b);
  options.log(
    `mass-offline ${what}: reclaimed in ${reclaims.length} sweeps of ` +
      reclaims.map((ms) => round2(ms)).join(', ') +
      ' ms',
  );
  return {
    bigMs: round2(percentile(big, 50)),
    smallMs: round2(percentile(small, 50)),
    reclaimSweeps: reclaims.length,
    reclaimMaxMs: round2(Math.max(0, ...reclaims)),
    reclaimTotalMs: round2(reclaims.reduce((sum, ms) => sum + ms, 0)),
  };
}

function round2(x: number): number {
  return Math.round(x * 100) / 100;
}
