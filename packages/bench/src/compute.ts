import { FeedCounter, type TopicWindowPost } from '@bubble/core';
import { DAY_MS } from '@bubble/protocol';
import { loadScripts } from '@bubble/store';
import { startRedisServer } from '@bubble/test-utils';
import { Redis } from 'ioredis';
import type { AuthorSizes, BenchOptions } from './bench-options.js';
import {
  buildWorkload,
  followedAuthors,
  percentile,
  postBatch,
  postsByAuthor,
  type Workload,
} from './workload.js';

export interface ComputeOptions extends AuthorSizes, BenchOptions {
  users: number;
  rounds: number;
  /** Upper bound on the time the naive baseline may run; the same for the script baseline. */
  naiveSeconds: number;
  /** Only the 200-follow figures, without the naive baseline (a quick before/after of ours). */
  quick: boolean;
}

export const COMPUTE_DEFAULTS: ComputeOptions = {
  users: 100_000,
  authors: 50_000,
  windowPosts: 500_000,
  rounds: 7,
  naiveSeconds: 5,
  quick: false,
  seed: 42,
  log: () => {},
};

const LOOKBACK = 7 * DAY_MS;
const NOW = Date.UTC(2026, 10, 30);

interface RoundFigures {
  usersPerSec: number;
  changedPerRound: number;
  medianMs: number;
}

/**
 * bench.md "compute": one core's in-process compute for 100k held users when posts from 1,000
 * distinct authors arrive, against the naive design (one pipelined ZCOUNT per followee).
 */
export async function benchCompute(partial: Partial<ComputeOptions> = {}) {
  const options = { ...COMPUTE_DEFAULTS, ...partial };
  const redis = await startRedisServer();
  const client = new Redis(redis.url);
  try {
    const figures200 = await measure(200, options, client, !options.quick);
    const topics200 = await measure(200, options, client, false, true);
    const withTopics = {
      usersPerSec_200_topics: Math.round(topics200.ours.usersPerSec),
      changedPerRound_200_topics: topics200.ours.changedPerRound,
      roundMedianMs_200_topics: round2(topics200.ours.medianMs),
    };
    if (options.quick) {
      return {
        scenario: 'compute',
        users: options.users,
        usersPerSec_200: Math.round(figures200.ours.usersPerSec),
        roundMedianMs_200: round2(figures200.ours.medianMs),
        ...withTopics,
      };
    }
    const figures2000 = await measure(2000, options, client, false);
    return {
      scenario: 'compute',
      users: options.users,
      authorsPosting: 1000,
      usersPerSec_200: Math.round(figures200.ours.usersPerSec),
      usersPerSec_2000: Math.round(figures2000.ours.usersPerSec),
      changedPerRound_200: figures200.ours.changedPerRound,
      changedPerRound_2000: figures2000.ours.changedPerRound,
      roundMedianMs_200: round2(figures200.ours.medianMs),
      roundMedianMs_2000: round2(figures2000.ours.medianMs),
      naiveUsersPerSec_200: Math.round(figures200.naive!),
      ratio_200: Math.round(figures200.ours.usersPerSec / figures200.naive!),
      scriptUsersPerSec_200: Math.round(figures200.script!.usersPerSec),
      scriptRatio_200: Math.round(figures200.ours.usersPerSec / figures200.script!.usersPerSec),
      scriptUsersMeasured_200: figures200.script!.users,
      ...withTopics,
    };
  } finally {
    client.disconnect();
    await redis.stop();
  }
}

async function measure(
  follows: number,
  options: ComputeOptions,
  client: Redis,
  withNaive: boolean,
  topics = false,
) {
  const what = topics ? ` + ${TOPICS_PER_USER} topics of ${TOPIC_POOL}` : '';
  options.log(`compute: building ${options.users} users × ${follows} follows${what}`);
  const workload = buildWorkload({
    seed: options.seed + follows,
    users: options.users,
    authors: options.authors,
    follows: { fixed: follows },
    windowPosts: options.windowPosts,
    now: NOW,
  });
  const counter = loadCounter(workload, topics);
  const ours = measureOurs(counter, workload, options, topics);
  options.log(
    `compute: ours at ${follows} follows${what}: ${Math.round(ours.usersPerSec)} users/s`,
  );
  let naive: number | undefined;
  let script: ScriptFigures | undefined;
  if (withNaive) {
    await client.flushall();
    await loadPosts(client, workload);
    naive = await measureNaive(client, workload, options);
    options.log(`compute: naive at ${follows} follows: ${Math.round(naive)} users/s`);
    script = await measureScript(client, workload, options);
    options.log(
      `compute: script at ${follows} follows: ${Math.round(script.usersPerSec)} users/s ` +
        `(${script.users} users)`,
    );
  }
  return { ours, naive, script };
}

/** The topics run: every user follows 5 of 10,000 topics; half the posts carry 1 or 2 topics. */
const TOPIC_POOL = 10_000;
const TOPICS_PER_USER = 5;

function topicsOfUser(u: number): string[] {
  return Array.from({ length: TOPICS_PER_USER }, (_, k) => `t${(u * 7 + k * 131) % TOPIC_POOL}`);
}

/** 50 % of posts none, 30 % one, 20 % two topics, drawn from the post's index. */
function topicsOfPost(i: number): string[] {
  const h = Math.imul(i + 1, 0x9e3779b1) >>> 0;
  const kind = h % 10;
  if (kind < 5) return [];
  const first = `t${(h >>> 8) % TOPIC_POOL}`;
  return kind < 8 ? [first] : [first, `t${((h >>> 8) + 337) % TOPIC_POOL}`];
}

function loadCounter(workload: Workload, topics = false): FeedCounter {
  const counter = new FeedCounter({ lookbackMs: LOOKBACK });
  counter.advanceTo(NOW);
  const byAuthor = postsByAuthor(workload);
  for (let u = 0; u < workload.users.length; u++) {
    const names = followedAuthors(workload, u);
    for (const author of counter.setUser(workload.users[u]!, names, workload.readAt[u]!)) {
      counter.loadAuthor(author, byAuthor.get(Number(author.slice(1))) ?? []);
    }
  }
  if (topics) {
    const byTopic = new Map<string, TopicWindowPost[]>();
    workload.posts.forEach((post, i) => {
      const postTopics = topicsOfPost(i);
      const author = workload.authors[post.author]!;
      for (const t of postTopics) {
        let list = byTopic.get(t);
        if (!list) byTopic.set(t, (list = []));
        list.push({ author, id: post.id, ts: post.ts, topics: postTopics });
      }
    });
    for (let u = 0; u < workload.users.length; u++) {
      for (const t of counter.setTopics(workload.users[u]!, topicsOfUser(u))) {
        counter.loadTopic(t, byTopic.get(t) ?? []);
      }
    }
  }
  for (const user of workload.users) counter.recompute(user);
  counter.takeChanged();
  return counter;
}

/**
 * Each round: time moves on by a second, 1,000 authors post, and every held user's new count
 * is known (the changed ones listed with their counts, the rest unchanged by construction).
 */
function measureOurs(
  counter: FeedCounter,
  workload: Workload,
  options: ComputeOptions,
  topics = false,
): RoundFigures {
  const times: number[] = [];
  let changed = 0;
  let sink = 0;
  for (let round = 1; round <= options.rounds; round++) {
    const ts = NOW + round * 1000;
    const batch = postBatch(workload, 1000, ts, `r${round}`).map((p, i) => ({
      author: workload.authors[p.author]!,
      id: p.id,
      ts: p.ts,
      topics: topics ? topicsOfPost(round * 1000 + i) : undefined,
    }));
    const started = performance.now();
    counter.advanceTo(ts);
    for (const post of batch) counter.addPost(post.author, post.id, post.ts, post.topics);
    const { ids, counts } = counter.takeChanged();
    for (let i = 0; i < ids.length; i++) sink += counts[i]!;
    times.push(performance.now() - started);
    changed = ids.length;
  }
  if (sink < 0) throw new Error('unreachable');
  times.sort((a, b) => a - b);
  const medianMs = percentile(times, 50);
  return {
    usersPerSec: workload.users.length / (medianMs / 1000),
    changedPerRound: changed,
    medianMs,
  };
}

async function loadPosts(client: Redis, workload: Workload): Promise<void> {
  const chunk = 10_000;
  for (let i = 0; i < workload.posts.length; i += chunk) {
    const pipeline = client.pipeline();
    for (const post of workload.posts.slice(i, i + chunk)) {
      pipeline.zadd(`naive:{a:${workload.authors[post.author]}}:posts`, post.ts, post.id);
    }
    await pipeline.exec();
  }
}

/**
 * The naive design at its best: follows already in memory, one ZCOUNT per followee, sent in
 * large pipelines. Runs over as many users as fit in the time bound.
 */
async function measureNaive(
  client: Redis,
  workload: Workload,
  options: ComputeOptions,
): Promise<number> {
  const T = NOW + 1000;
  const usersPerPipeline = 100;
  const deadline = performance.now() + options.naiveSeconds * 1000;
  const started = performance.now();
  let done = 0;
  let sink = 0;
  while (done < workload.users.length && performance.now() < deadline) {
    const pipeline = client.pipeline();
    const end = Math.min(done + usersPerPipeline, workload.users.length);
    for (let u = done; u < end; u++) {
      const after = `(${Math.max(workload.readAt[u] ?? -Infinity, T - LOOKBACK)}`;
      for (const a of workload.follows[u]!) {
        pipeline.zcount(`naive:{a:${workload.authors[a]}}:posts`, after, T);
      }
    }
    const results = await pipeline.exec();
    for (const [, count] of results ?? []) sink += count as number;
    done = end;
  }
  if (sink < 0) throw new Error('unreachable');
  return done / ((performance.now() - started) / 1000);
}

interface ScriptFigures {
  usersPerSec: number;
  users: number;
}

/** Script calls sent per pipeline, and pipelines kept in flight so Redis never waits on us. */
const SCRIPT_USERS_PER_PIPELINE = 100;
const SCRIPT_PIPELINES_IN_FLIGHT = 4;

/**
 * The pull design at its best, as a cold start does it on one server: each user's count summed
 * inside Redis by one EVALSHA of the store's countPosts script (a ZCOUNT per followee in Lua),
 * the calls pipelined with several pipelines in flight. Follows are already in memory, as for
 * the naive baseline; runs over as many users as fit in the time bound.
 */
async function measureScript(
  client: Redis,
  workload: Workload,
  options: ComputeOptions,
): Promise<ScriptFigures> {
  const countPosts = loadScripts().find((s) => s.name === 'countPosts')!;
  const sha = (await client.script('LOAD', countPosts.lua)) as string;
  const T = NOW + 1000;
  const deadline = performance.now() + options.naiveSeconds * 1000;
  const started = performance.now();
  let next = 0;
  let done = 0;
  let sink = 0;
  const sendOne = async (): Promise<void> => {
    while (next < workload.users.length && performance.now() < deadline) {
      const pipeline = client.pipeline();
      const end = Math.min(next + SCRIPT_USERS_PER_PIPELINE, workload.users.length);
      for (let u = next; u < end; u++) {
        const keys = Array.from(
          workload.follows[u]!,
          (a) => `naive:{a:${workload.authors[a]}}:posts`,
        );
        const after = `(${Math.max(workload.readAt[u] ?? -Infinity, T - LOOKBACK)}`;
        pipeline.evalsha(sha, keys.length, ...keys, after, T);
      }
      const count = end - next;
      next = end;
      const results = await pipeline.exec();
      for (const [err, reply] of results ?? []) {
        if (err) throw err;
        sink += reply as number;
      }
      done += count;
    }
  };
  await Promise.all(Array.from({ length: SCRIPT_PIPELINES_IN_FLIGHT }, sendOne));
  if (sink < 0) throw new Error('unreachable');
  return { usersPerSec: done / ((performance.now() - started) / 1000), users: done };
}

function round2(x: number): number {
  return Math.round(x * 100) / 100;
}
