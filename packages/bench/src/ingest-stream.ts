import { compareStreamIds, RedisKeys } from '@bubble/store';
import type { RoleProcess } from '@bubble/test-utils';
import { Redis } from 'ioredis';
import { startBenchRedis } from './bench-redis.js';
import { INGEST_DEFAULTS, type IngestOptions } from './ingest.js';
import { RawHttpConnection } from './http-client.js';
import { postBatchesFor } from './post-batches.js';
import { logProfiles } from './profile-summary.js';
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
import { BacklogSampler } from './ingest-backlog-sampler.js';
import { RespConnection, xaddPostHead } from './resp-connection.js';
import { commandUsec, redisCpuSeconds } from './redis-probe.js';
import { authorsWorkload, percentile } from './workload.js';

/** The `ingest` run's options (its HTTP phase), and the stream phase's. */
export interface IngestStreamOptions extends IngestOptions {
  /** Length of the HTTP phase; the stream phase appends as many posts as it accepted. */
  seconds: number;
  /** XADDs per pipeline the producer sends, and pipelines it keeps in flight. */
  producerPipeline: number;
  producerInFlight: number;
  /**
   * Entries the producer may have appended beyond those the group was delivered: it waits
   * above this, which bounds the stream's memory when the producer outruns the consumer.
   */
  maxLead: number;
  /** How often the group's backlog is sampled (lag, pending, oldest entry's age). */
  sampleMs: number;
  /** Longest wait for the group to acknowledge the last entry. */
  drainTimeoutMs: number;
}

export const INGEST_STREAM_DEFAULTS: IngestStreamOptions = {
  ...INGEST_DEFAULTS,
  seconds: 20,
  producerPipeline: 1000,
  producerInFlight: 4,
  maxLead: 200_000,
  sampleMs: 50,
  drainTimeoutMs: 120_000,
};

/** Posts one phase produced: post i is `${prefix}${i}` by author `authorOf[i]`. */
interface PhasePosts {
  prefix: string;
  authorOf: Int32Array;
  count: number;
}

/**
 * bench.md "ingest-stream": the `ingest` workload and gateway, in one run (a) `POST /v1/posts`
 * in batches for `seconds` (`httpPostsPerSec`), then (b) as many posts appended to the ingest
 * stream, one post per entry (`XADD <prefix>:ingest:{0} * v 1 op post body {"author","id","ts"}`,
 * what a platform's write path appends), pipelined by a producer while the gateway's consumer
 * group applies them. `eventsPerSec` = posts applied ÷ time from the first XADD to the moment
 * the group had every entry delivered and acknowledged; `lagMaxMs` = the largest age of the
 * oldest entry not yet delivered or still pending, sampled every `sampleMs`. Every post of both
 * phases is then looked up in its author's window (ZMSCORE): `missing` must be 0.
 */
export async function benchIngestStream(partial: Partial<IngestStreamOptions> = {}) {
  const options = { ...INGEST_STREAM_DEFAULTS, ...partial };
  const { log } = options;
  const stamp = `${Date.now()}-ingest-stream`;
  const workload = authorsWorkload(options);
  const redis = await startBenchRedis(options);
  const { admin } = redis;
  const keys = new RedisKeys(KEY_PREFIX, options.pools);
  const streamKey = keys.ingest(0);
  const producer = await RespConnection.connect(redis.url);
  const sampler = new Redis(redis.url);
  const backlog = new BacklogSampler(sampler, streamKey);
  let gateway: RoleProcess | undefined;
  const connections: RawHttpConnection[] = [];
  let figures: Record<string, unknown>;
  try {
    await storePostsAndCursors(redis.store, redis.service, workload);
    log(`ingest-stream: ${workload.posts.length} posts of the last 7 days stored`);
    const secrets = benchSecrets();
    gateway = await startProfiledGateway(redis.url, secrets, options, stamp, {
      env: { BUBBLE_INGEST_STREAM: '1', BUBBLE_INGEST_PARTITIONS: '1' },
    });
    const pids = { gateway: gateway.pid, bench: process.pid };
    for (let c = 0; c < options.connections; c++) {
      connections.push(await RawHttpConnection.connect('127.0.0.1', gateway.port));
    }

    // (a) POST /v1/posts
    const httpPhase = (seconds: number, posts: PhasePosts | null) => {
      let warmSeq = 0;
      return postBatchesFor(connections, seconds, secrets.apiKey, options.batch, () => {
        const ts = Date.now();
        return Array.from({ length: options.batch }, () => {
          const author = workload.authorRank.next();
          if (posts === null)
            return { author: workload.authors[author]!, id: `hw${warmSeq++}`, ts };
          const seq = posts.count++;
          if (seq >= posts.authorOf.length) posts.authorOf = grow(posts.authorOf);
          posts.authorOf[seq] = author;
          return { author: workload.authors[author]!, id: `${posts.prefix}${seq}`, ts };
        });
      });
    };
    log(`ingest-stream: HTTP warm-up, ${options.connections} connections × ${options.batch} posts`);
    await httpPhase(options.warmupSeconds, null);
    const httpPosts: PhasePosts = { prefix: 'h', authorOf: new Int32Array(1 << 20), count: 0 };
    let cpuBefore = await cpuSnapshot(pids);
    let redisBefore = await redisCpuSeconds(admin);
    let usecBefore = await commandUsec(admin);
    const httpFrom = Date.now();
    const http = await httpPhase(options.seconds, httpPosts);
    const httpRedisUs = usPerPostByCommand(usecBefore, await commandUsec(admin), http.accepted);
    const httpCpu = cpuShares(cpuBefore, await cpuSnapshot(pids));
    httpCpu['redis-server'] = round2(((await redisCpuSeconds(admin)) - redisBefore) / http.elapsed);
    const httpPostsPerSec = Math.round(http.accepted / http.elapsed);
    log(
      `ingest-stream: HTTP ${httpPostsPerSec} posts/s (${http.accepted} accepted in ` +
        `${http.elapsed.toFixed(1)} s); CPU (cores) ${JSON.stringify(httpCpu)}`,
    );
    for (const connection of connections) connection.close();
    connections.length = 0;
    const httpMissing = await missingPosts(admin, keys, workload.authors, httpPosts);
    // The stream phase starts from the state the HTTP phase started from: without this its
    // posts would go into windows grown by the HTTP phase's (2M posts at 100k/s, where a ZADD
    // costs Redis ≈ 40 % more), a handicap of running second, not of the stream.
    await removePostsSince(admin, keys, workload.authors, httpPosts, httpFrom);

    // (b) the ingest stream
    let seq = 0;
    let totalAppended = 0;
    const entry = (posts: PhasePosts | null) => {
      const author = workload.authorRank.next();
      let id: string;
      if (posts === null) id = `x-${seq++}`;
      else {
        const n = posts.count++;
        posts.authorOf[n] = author;
        id = `${posts.prefix}${n}`;
      }
      // What JSON.stringify({author, id, ts}) writes: ids and authors here are plain ASCII.
      return `{"author":"${workload.authors[author]!}","id":"${id}","ts":${Date.now()}}`;
    };
    const xaddHead = xaddPostHead(streamKey);
    const produce = async (count: number, posts: PhasePosts | null) => {
      let appended = 0;
      let lastId = '';
      const pipelines = new Set<Promise<void>>();
      while (appended < count) {
        while (totalAppended - backlog.delivered > options.maxLead) await sleep(5);
        const n = Math.min(options.producerPipeline, count - appended);
        let commands = '';
        for (let i = 0; i < n; i++) {
          const body = entry(posts);
          commands += `${xaddHead}$${body.length}\r\n${body}\r\n`;
        }
        appended += n;
        totalAppended += n;
        const sent = producer.send(commands, n).then((last) => {
          if (compareIds(last, lastId) > 0) lastId = last;
        });
        pipelines.add(sent);
        void sent.finally(() => pipelines.delete(sent));
        if (pipelines.size >= options.producerInFlight) await Promise.race(pipelines);
      }
      await Promise.all(pipelines);
      return lastId;
    };
    const drain = async (lastId: string) => {
      const deadline = performance.now() + options.drainTimeoutMs;
      for (;;) {
        await backlog.sample();
        if (backlog.pending === 0 && compareIds(backlog.lastDelivered, lastId) >= 0) return;
        if (performance.now() > deadline) {
          throw new Error(
            `ingest-stream: the group had not acknowledged ${lastId} after ${options.drainTimeoutMs} ms ` +
              `(last delivered ${backlog.lastDelivered}, ${backlog.pending} pending)`,
          );
        }
        await sleep(options.sampleMs);
      }
    };
    const warmupEntries = Math.min(http.accepted, 50_000);
    log(`ingest-stream: stream warm-up, ${warmupEntries} entries`);
    const sampling = backlog.run(options.sampleMs);
    await drain(await produce(warmupEntries, null));
    const deadBefore = await admin.xlen(keys.ingestDead(0));

    const streamPosts: PhasePosts = {
      prefix: 's',
      authorOf: new Int32Array(http.accepted),
      count: 0,
    };
    log(`ingest-stream: appending ${http.accepted} posts, one per entry`);
    cpuBefore = await cpuSnapshot(pids);
    redisBefore = await redisCpuSeconds(admin);
    usecBefore = await commandUsec(admin);
    backlog.resetMax();
    const firstXadd = performance.now();
    const lastId = await produce(http.accepted, streamPosts);
    const producedIn = (performance.now() - firstXadd) / 1000;
    await drain(lastId);
    const streamElapsed = (performance.now() - firstXadd) / 1000;
    backlog.stop();
    await sampling;
    const streamRedisUs = usPerPostByCommand(
      usecBefore,
      await commandUsec(admin),
      streamPosts.count,
    );
    const streamCpu = cpuShares(cpuBefore, await cpuSnapshot(pids));
    streamCpu['redis-server'] = round2(
      ((await redisCpuSeconds(admin)) - redisBefore) / streamElapsed,
    );
    const deadLetters = (await admin.xlen(keys.ingestDead(0))) - deadBefore;

    // Every post of both phases, looked up in its author's window.
    const streamMissing = await missingPosts(admin, keys, workload.authors, streamPosts);
    const applied = streamPosts.count - streamMissing;
    const eventsPerSec = Math.round(applied / streamElapsed);
    const streamRatio = round2(eventsPerSec / httpPostsPerSec);
    const metrics = await gatewaySeries(gateway.url, 'bubble_ingest_');
    log(
      `ingest-stream: stream ${eventsPerSec} events/s (${applied} of ${streamPosts.count} applied in ` +
        `${streamElapsed.toFixed(1)} s, appended in ${producedIn.toFixed(1)} s), ratio ${streamRatio}, ` +
        `lag max ${backlog.maxAgeMs} ms; missing: HTTP ${httpMissing}, stream ${streamMissing}; ` +
        `CPU (cores) ${JSON.stringify(streamCpu)}`,
    );
    figures = {
      scenario: 'ingest-stream',
      eventsPerSec,
      httpPostsPerSec,
      streamRatio,
      lagMaxMs: backlog.maxAgeMs,
      postsPerEntry: 1,
      // What one whole core of gateway would do at the CPU per post measured in each phase (an
      // estimate: on a shared machine the gateway gets only part of a core), and their ratio.
      httpPostsPerGatewayCpuSec: perCore(httpPostsPerSec, httpCpu.gateway),
      eventsPerGatewayCpuSec: perCore(eventsPerSec, streamCpu.gateway),
      cpuStreamRatio: ratio(
        perCore(eventsPerSec, streamCpu.gateway),
        perCore(httpPostsPerSec, httpCpu.gateway),
      ),
      http: {
        accepted: http.accepted,
        refused: http.refused,
        missing: httpMissing,
        statuses: http.statuses,
        batch: options.batch,
        connections: options.connections,
        callP50Ms: round2(percentile(http.times, 50)),
        callP99Ms: round2(percentile(http.times, 99)),
        seconds: round2(http.elapsed),
        cpuCores: httpCpu,
        gatewayCpuUsPerPost: usPer(httpCpu.gateway, httpPostsPerSec),
        redisUsPerPost: httpRedisUs,
      },
      stream: {
        appended: streamPosts.count,
        applied,
        missing: streamMissing,
        deadLetters,
        seconds: round2(streamElapsed),
        producerSeconds: round2(producedIn),
        producerPerSec: Math.round(streamPosts.count / producedIn),
        maxLead: options.maxLead,
        lagMaxEntries: backlog.maxUndelivered,
        pendingMax: backlog.maxPending,
        samples: backlog.samples,
        cpuCores: streamCpu,
        gatewayCpuUsPerEvent: usPer(streamCpu.gateway, eventsPerSec),
        redisUsPerEvent: streamRedisUs,
      },
      gatewayMetrics: metrics,
      windowPosts: options.windowPosts,
      machine: machineFacts(),
    };
  } finally {
    backlog.stop();
    for (const connection of connections) connection.close();
    await gateway?.stop().catch(() => {});
    producer.close();
    sampler.disconnect();
    await redis.stop();
  }
  if (options.profileDir) figures.profiles = await logProfiles(options.profileDir, stamp, log);
  return figures;
}

/** Orders two stream ids ("ms-seq"); '' (none yet) before every id. */
function compareIds(a: string, b: string): number {
  return b === '' ? 1 : compareStreamIds(a, b);
}

function grow(array: Int32Array): Int32Array {
  const bigger = new Int32Array(array.length * 2);
  bigger.set(array);
  return bigger;
}

/** Posts of `posts` absent from their author's window: ZMSCORE per author, pipelined. */
async function missingPosts(
  redis: Redis,
  keys: RedisKeys,
  authors: readonly string[],
  posts: PhasePosts,
): Promise<number> {
  // Post numbers grouped by author (a counting sort).
  const starts = new Int32Array(authors.length + 1);
  for (let i = 0; i < posts.count; i++) starts[posts.authorOf[i]! + 1]!++;
  for (let a = 0; a < authors.length; a++) starts[a + 1]! += starts[a]!;
  const fill = starts.slice(0, authors.length);
  const byAuthor = new Int32Array(posts.count);
  for (let i = 0; i < posts.count; i++) byAuthor[fill[posts.authorOf[i]!]!++] = i;
  let missing = 0;
  for (let from = 0; from < authors.length; from += 500) {
    const pipeline = redis.pipeline();
    for (let a = from; a < Math.min(from + 500, authors.length); a++) {
      if (starts[a] === starts[a + 1]) continue;
      const ids: string[] = [];
      for (let k = starts[a]!; k < starts[a + 1]!; k++) ids.push(`${posts.prefix}${byAuthor[k]}`);
      pipeline.zmscore(keys.posts(authors[a]!), ...ids);
    }
    for (const [err, scores] of (await pipeline.exec()) ?? []) {
      if (err) throw err;
      for (const score of scores as (string | null)[]) if (score === null) missing++;
    }
  }
  return missing;
}

/** Removes from the windows of the authors of `posts` every post stamped at or after `from`. */
async function removePostsSince(
  redis: Redis,
  keys: RedisKeys,
  authors: readonly string[],
  posts: PhasePosts,
  from: number,
): Promise<void> {
  const touched = new Set<number>();
  for (let i = 0; i < posts.count; i++) touched.add(posts.authorOf[i]!);
  const list = [...touched];
  for (let at = 0; at < list.length; at += 500) {
    const pipeline = redis.pipeline();
    for (const author of list.slice(at, at + 500)) {
      pipeline.zremrangebyscore(keys.posts(authors[author]!), from, '+inf');
    }
    for (const [err] of (await pipeline.exec()) ?? []) if (err) throw err;
  }
}

/** A gateway's metric series whose names start with `prefix`, by name and labels. */
export async function gatewaySeries(
  gatewayUrl: string,
  prefix: string,
): Promise<Record<string, number>> {
  const text = await fetch(`${gatewayUrl}/metrics`)
    .then((response) => response.text())
    .catch(() => '');
  const series: Record<string, number> = {};
  for (const line of text.split('\n')) {
    if (!line.startsWith(prefix)) continue;
    const at = line.lastIndexOf(' ');
    series[line.slice(0, at)] = Number(line.slice(at + 1));
  }
  return series;
}

/**
 * Redis time per post in a phase by command (INFO commandstats): where a phase's Redis time
 * goes. A command a script calls is counted under its own name and inside the script's figure
 * too (`evalsha`), so the figures overlap; the server's whole CPU is in the phase's `cpuCores`.
 */
function usPerPostByCommand(
  before: Map<string, number>,
  after: Map<string, number>,
  posts: number,
): Record<string, number> {
  const perPost: Record<string, number> = {};
  for (const [name, usec] of after) {
    const spent = usec - (before.get(name) ?? 0);
    if (spent > 0 && name !== 'info' && posts > 0) perPost[name] = round2(spent / posts);
  }
  return perPost;
}

function perCore(perSec: number, cores: number | null | undefined): number | null {
  return cores === null || cores === undefined || cores === 0 ? null : Math.round(perSec / cores);
}

function ratio(a: number | null, b: number | null): number | null {
  return a === null || b === null || b === 0 ? null : round2(a / b);
}

function usPer(cores: number | null | undefined, perSec: number): number | null {
  return cores === null || cores === undefined || perSec === 0
    ? null
    : round2((cores * 1e6) / perSec);
}
