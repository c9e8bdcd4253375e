/**
 * The ingest stream consumer (docs/api.md, "Events through a Redis Stream"), in-process against
 * real redis-servers: a BadgeService over a RedisStore, IngestConsumers started here, entries
 * XADDed as a platform appends them. Poison entries, retries up to the cap, batching, a Redis
 * restarted empty, a silent connection, trimming, and a Redis Cluster run with P = 3.
 */
import { BadgeService } from '@bubble/badges';
import { IngestConsumers, type IngestConsumerOptions } from '@bubble/events';
import {
  RedisKeys,
  RedisStore,
  connectRedis,
  ingestPartitionOf,
  readIngestBacklog,
  type RedisClient,
} from '@bubble/store';
import {
  TcpProxy,
  restartRedisServer,
  startRedisServer,
  uniquePrefix,
  waitFor,
  type RedisServerHandle,
} from '@bubble/test-utils';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { useRedisCluster } from '../support/redis-cluster.js';

const POOLS = 8;
const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });

interface Rig {
  store: RedisStore;
  service: BadgeService;
  keys: RedisKeys;
  /** Where the test XADDs and looks (a client of its own). */
  admin: RedisClient;
  consumers: IngestConsumers[];
  start(options?: Partial<IngestConsumerOptions>): IngestConsumers;
  close(): Promise<void>;
}

function rig(
  target: { url?: string; clusterNodes?: string[] },
  consumerTarget = target,
  partitions = 1,
): Rig {
  const keyPrefix = uniquePrefix('ingest');
  const store = new RedisStore({ ...target, keyPrefix, pools: POOLS });
  const service = new BadgeService(store, store.clock);
  const admin = connectRedis(target, 'test-admin');
  const sources: RedisClient[] = [];
  const consumers: IngestConsumers[] = [];
  return {
    store,
    service,
    keys: store.keys,
    admin,
    consumers,
    start(options = {}) {
      const source =
        consumerTarget === target ? store.redis : connectRedis(consumerTarget, 'test-consumer');
      if (source !== store.redis) sources.push(source);
      const consumer = new IngestConsumers({
        redis: source,
        keys: store.keys,
        service,
        consumer: `c${consumers.length}`,
        partitions,
        claimMs: 300,
        maxDeliveries: 3,
        blockMs: 300,
        logger,
        backlogEveryMs: 200,
        trimEveryMs: 100,
        ...options,
      });
      consumers.push(consumer);
      consumer.start();
      return consumer;
    },
    async close() {
      await Promise.all(consumers.map((consumer) => consumer.close()));
      for (const source of sources) source.disconnect();
      admin.disconnect();
      await store.close();
    },
  };
}

function append(r: Rig, op: string, body: unknown, partition = 0, v = '1'): Promise<string> {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  return r.admin.xadd(
    r.keys.ingest(partition),
    '*',
    'v',
    v,
    'op',
    op,
    'body',
    text,
  ) as Promise<string>;
}

async function deadLetters(r: Rig, partition = 0): Promise<Record<string, string>[]> {
  const entries = (await r.admin.xrange(r.keys.ingestDead(partition), '-', '+')) as [
    string,
    string[],
  ][];
  return entries.map(([, fields]) => {
    const out: Record<string, string> = {};
    for (let i = 0; i + 1 < fields.length; i += 2) out[fields[i]!] = fields[i + 1]!;
    return out;
  });
}

async function following(r: Rig, user: string): Promise<string[]> {
  return (await r.service.listFollows(user)).sort();
}

/** waitFor for a value: `fn` answers false until it has one. */
async function waitForValue<T>(
  fn: () => Promise<T | false>,
  options?: Parameters<typeof waitFor>[1],
): Promise<T> {
  return (await waitFor(fn, options)) as T;
}

async function backlog(r: Rig, partitions = 1) {
  return readIngestBacklog(r.admin, r.keys, partitions);
}

describe('the ingest stream on one redis-server', () => {
  let server: RedisServerHandle;
  let current: Rig | undefined;
  beforeAll(async () => {
    server = await startRedisServer();
  });
  afterEach(async () => {
    await current?.close();
    current = undefined;
  });
  afterAll(async () => {
    await server.stop();
  });

  it('dead-letters poison entries at once with their error and deliveries and applies those behind them', async () => {
    const r = (current = rig({ url: server.url }));
    await append(r, 'follow', '{"user":"u1",');
    await append(r, 'befriend', { user: 'u1', author: 'a1' });
    await append(r, 'follow', { user: 'u 1', author: 'a1' });
    await append(r, 'follow', { user: 'u1', author: 'a1' }, 0, '9');
    await append(r, 'counter', { user: 'u1', kind: 'likes', n: 1 });
    await append(r, 'follow', { user: 'u1', author: 'a2' });
    await append(r, 'follow', { user: 'u1', author: 'a3' });
    const consumers = r.start();
    await waitFor(async () => (await following(r, 'u1')).length === 2, { timeoutMs: 10_000 });
    expect(await following(r, 'u1')).toEqual(['a2', 'a3']);
    const dead = await waitForValue(async () => {
      const letters = await deadLetters(r);
      return letters.length === 5 && letters;
    });
    expect(dead.map((d) => d.error)).toEqual([
      expect.stringMatching(/UB_ERR_BAD_REQUEST: the body is not valid JSON/),
      expect.stringMatching(/UB_ERR_BAD_REQUEST: unknown op "befriend"/),
      expect.stringMatching(/UB_ERR_BAD_ID: op follow: user: /),
      expect.stringMatching(/UB_ERR_BAD_REQUEST: unknown v "9"/),
      expect.stringMatching(/UB_ERR_BAD_REQUEST: op counter: /),
    ]);
    for (const letter of dead) {
      expect(letter).toMatchObject({ deliveries: '1', entry: expect.stringMatching(/^\d+-\d+$/) });
      expect(Object.keys(letter).sort()).toEqual(
        ['body', 'deliveries', 'entry', 'error', 'op', 'v'].sort(),
      );
    }
    expect(dead[1]).toMatchObject({ op: 'befriend', v: '1' });
    await waitFor(async () => {
      const [one] = await backlog(r);
      return one!.pending === 0 && one!.lag === 0 && one!.deadLetters === 5;
    });
    // The gauges follow the backlog (refreshed every backlogEveryMs).
    await waitFor(async () => {
      const gauge = await consumers.metrics.deadLetters.get();
      return gauge.values.some((v) => v.labels.partition === '0' && v.value === 5);
    });
    const outcomes = (await consumers.metrics.entries.get()).values.map(
      (v) => `${v.labels.op}/${v.labels.outcome}=${v.value}`,
    );
    expect(outcomes.sort()).toEqual(
      ['counter/dead=1', 'follow/applied=2', 'follow/dead=3', 'unknown/dead=1'].sort(),
    );
  });

  it('applies the topic ops (followTopic, unfollowTopic, replaceTopics) and posts carrying topics', async () => {
    const r = (current = rig({ url: server.url }));
    await append(r, 'followTopic', { user: 'u1', topic: 'cats' });
    await append(r, 'followTopic', { user: 'u1', topic: 'dogs' });
    await append(r, 'unfollowTopic', { user: 'u1', topic: 'cats' });
    await append(r, 'replaceTopics', { user: 'u2', topics: ['owls', 'bats'] });
    await append(r, 'followTopic', { user: 'u1', topic: 'bad topic' });
    await append(r, 'post', { author: 'bob', id: 'p1', ts: Date.now() - 1000, topics: ['dogs'] });
    r.start();
    await waitFor(async () => (await r.service.listTopics('u2')).length === 2, {
      timeoutMs: 10_000,
    });
    await waitFor(async () => (await r.service.computeFeed('u1', Date.now())) === 1, {
      timeoutMs: 10_000,
    });
    expect(await r.service.listTopics('u1')).toEqual(['dogs']);
    expect(await r.service.listTopics('u2')).toEqual(['bats', 'owls']);
    const dead = await waitForValue(async () => {
      const letters = await deadLetters(r);
      return letters.length === 1 && letters;
    });
    expect(dead[0]!.error).toMatch(/UB_ERR_BAD_ID: op followTopic: topic: /);
  });

  it('leaves an entry the store fails on (WRONGTYPE) pending, retries it when claimed, and dead-letters it after the cap', async () => {
    const r = (current = rig({ url: server.url }));
    // u2's follows key is a hash: every follow of u2 fails with WRONGTYPE, not a 4xx.
    await r.admin.hset(r.keys.follows('u2'), 'not', 'a follow list');
    await append(r, 'follow', { user: 'u2', author: 'a1' });
    await append(r, 'follow', { user: 'u3', author: 'a1' });
    const consumers = r.start({ maxDeliveries: 3, claimMs: 200 });
    await waitFor(async () => (await following(r, 'u3')).length === 1);
    const [letter] = await waitForValue(async () => {
      const letters = await deadLetters(r);
      return letters.length === 1 && letters;
    });
    expect(letter).toMatchObject({ op: 'follow', deliveries: '3' });
    expect(letter!.error).toMatch(/WRONGTYPE/);
    expect(consumers.metrics.claimed).toBeDefined();
    const claimed = (await consumers.metrics.claimed.get()).values[0]!.value;
    expect(claimed).toBeGreaterThanOrEqual(2);
    const [one] = await waitForValue(async () => {
      const b = await backlog(r);
      return b[0]!.pending === 0 && b;
    });
    expect(one).toMatchObject({ lag: 0, pending: 0, deadLetters: 1 });
  });

  it('dead-letters an entry claimed with more deliveries than the cap without applying it', async () => {
    const r = (current = rig({ url: server.url }));
    const stream = r.keys.ingest(0);
    await r.admin.xgroup('CREATE', stream, 'bubble', '0', 'MKSTREAM');
    await append(r, 'follow', { user: 'u4', author: 'a1' });
    // A consumer that died on it three times: read, never acknowledged, claimed again.
    await r.admin.xreadgroup('GROUP', 'bubble', 'dead1', 'COUNT', 10, 'STREAMS', stream, '>');
    for (const name of ['dead2', 'dead3']) {
      await r.admin.xautoclaim(stream, 'bubble', name, 0, '0-0');
    }
    r.start({ maxDeliveries: 3, claimMs: 100 });
    const [letter] = await waitForValue(async () => {
      const letters = await deadLetters(r);
      return letters.length === 1 && letters;
    });
    expect(letter).toMatchObject({ op: 'follow', deliveries: '4' });
    expect(letter!.error).toMatch(/without being acknowledged/);
    expect(await following(r, 'u4')).toEqual([]);
  });

  it.each([
    ['its own read connection', false],
    ['reads packed by a script (as on a Cluster)', true],
  ])(
    'applies appended posts as batches, reading on %s: few script calls, one XACK per read, order kept',
    async (_, packedReads) => {
      const r = (current = rig({ url: server.url }));
      const n = 2000;
      const now = Date.now();
      const pipeline = r.admin.pipeline();
      for (let i = 0; i < n; i++) {
        const body = JSON.stringify({
          author: `a${i % 50}`,
          id: `p${i}`,
          ts: now - 1000 + (i % 100),
        });
        pipeline.xadd(r.keys.ingest(0), '*', 'v', '1', 'op', 'post', 'body', body);
      }
      await pipeline.exec();
      await r.service.follow('reader', 'a1');
      const before = r.store.commandsSent();
      const consumers = r.start({ count: 1000, packedReads });
      await waitFor(
        async () => (await backlog(r))[0]!.pending === 0 && (await backlog(r))[0]!.lag === 0,
      );
      const applied = await waitForValue(async () => {
        const values = (await consumers.metrics.entries.get()).values;
        const sum = values.find((v) => v.labels.outcome === 'applied')?.value ?? 0;
        return sum === n && sum;
      });
      expect(applied).toBe(n);
      // The path it names is the one that read: only the read connection names itself so.
      const clients = String(await r.admin.call('CLIENT', 'LIST'));
      expect(clients.includes(':ingest-read')).toBe(!packedReads);
      const commands = r.store.commandsSent() - before;
      console.log(`[ingest batches] ${n} posts applied with ${commands} store commands`);
      // 2 reads of 1000 → 2 ingestPosts calls, each a handful of commands (one script per shard).
      expect(commands).toBeLessThan(60);
      expect((await r.service.badge('reader')).feed).toBe(n / 50);
    },
  );

  it('recreates the group after Redis restarted empty and consumes again within seconds', async () => {
    const r = (current = rig({ url: server.url }));
    const consumers = r.start();
    await append(r, 'follow', { user: 'u5', author: 'a1' });
    await waitFor(async () => (await following(r, 'u5')).length === 1);
    server = await restartRedisServer(server);
    const restartedAt = Date.now();
    await waitFor(async () => (await r.admin.ping()) === 'PONG', { timeoutMs: 10_000 });
    await append(r, 'follow', { user: 'u5', author: 'a2' });
    await waitFor(async () => (await following(r, 'u5')).includes('a2'), { timeoutMs: 10_000 });
    expect(Date.now() - restartedAt).toBeLessThan(8_000);
    const created = (await consumers.metrics.groupCreated.get()).values[0]!.value;
    expect(created).toBe(2);
  });

  it('deletes consumers gone idle with nothing pending, never one with entries pending', async () => {
    const r = (current = rig({ url: server.url }));
    const stream = r.keys.ingest(0);
    await r.admin.xgroup('CREATE', stream, 'bubble', '0', 'MKSTREAM');
    await r.admin.xgroup('CREATECONSUMER', stream, 'bubble', 'ghost');
    await append(r, 'follow', { user: 'u6', author: 'a1' });
    await r.admin.xreadgroup('GROUP', 'bubble', 'holder', 'COUNT', 1, 'STREAMS', stream, '>');
    await new Promise((resolve) => setTimeout(resolve, 300));
    r.start({ forgetConsumersAfterMs: 200, claimMs: 60_000 });
    const names = async () =>
      ((await r.admin.xinfo('CONSUMERS', stream, 'bubble')) as string[][]).map((c) => c[1]);
    await waitFor(async () => !(await names()).includes('ghost'));
    // The one holding an entry stays, whatever its idle time.
    expect(await names()).toContain('holder');
  });

  it('trims acknowledged entries: the stream stays short while undelivered ones stay', async () => {
    const r = (current = rig({ url: server.url }));
    r.start({ trimEveryMs: 50 });
    for (let round = 0; round < 5; round++) {
      const pipeline = r.admin.pipeline();
      for (let i = 0; i < 200; i++) {
        const body = JSON.stringify({ user: `t${round}`, author: `a${i}` });
        pipeline.xadd(r.keys.ingest(0), '*', 'v', '1', 'op', 'follow', 'body', body);
      }
      await pipeline.exec();
    }
    await waitFor(async () => (await following(r, 't4')).length === 200);
    await waitFor(async () => (await r.admin.xlen(r.keys.ingest(0))) <= 1, { timeoutMs: 5_000 });
  });
});

describe('a silent connection (TcpProxy.silence)', () => {
  let server: RedisServerHandle;
  let proxy: TcpProxy;
  let current: Rig | undefined;
  beforeAll(async () => {
    server = await startRedisServer();
    proxy = await TcpProxy.start({ port: server.port });
  });
  afterAll(async () => {
    await current?.close();
    await proxy.close();
    await server.stop();
  });

  it(
    'resumes within block time + 5 s after a 5 s silence, and nothing is lost',
    { timeout: 45_000 },
    async () => {
      const blockMs = 1_000;
      // The consumers reach Redis through the proxy; the store and the test directly.
      const r = (current = rig({ url: server.url }, { url: proxy.url }));
      const consumers = r.start({ blockMs, claimMs: 2_000 });
      let sent = 0;
      const appendOne = async () => {
        await append(r, 'follow', { user: 'silent', author: `a${sent}` });
        sent++;
      };
      await appendOne();
      await waitFor(async () => (await following(r, 'silent')).length === 1);
      proxy.silence();
      const silentUntil = Date.now() + 5_000;
      while (Date.now() < silentUntil) {
        await appendOne();
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      proxy.heal();
      const healedAt = Date.now();
      await appendOne();
      await waitFor(async () => (await following(r, 'silent')).length === sent, {
        timeoutMs: blockMs + 5_000 + 4_000,
      });
      const resumedMs = Date.now() - healedAt;
      console.log(`[ingest silence] ${sent} entries; all applied ${resumedMs} ms after heal`);
      expect(resumedMs).toBeLessThan(blockMs + 5_000 + 2_500);
      expect(consumers.readStalls).toBeGreaterThanOrEqual(1);
      // XADDed = acknowledged + pending + dead.
      await waitFor(async () => {
        const [one] = await backlog(r);
        return one!.pending === 0 && one!.lag === 0;
      });
      expect(await deadLetters(r)).toEqual([]);
    },
  );
});

describe('Redis Cluster, P = 3', () => {
  const cluster = useRedisCluster();
  let current: Rig | undefined;
  afterAll(async () => {
    await current?.close();
  });

  it(
    'consumes every partition, each on its own slot; XADDed = acknowledged + pending + dead',
    { timeout: 45_000 },
    async () => {
      const clusterNodes = cluster.nodes;
      const partitions = 3;
      const r = (current = rig({ clusterNodes }, { clusterNodes }, partitions));
      const slots = new Set(
        await Promise.all(
          [0, 1, 2].map(
            async (i) => (await r.admin.cluster('KEYSLOT', r.keys.ingest(i))) as number,
          ),
        ),
      );
      expect(slots.size).toBe(3);
      r.start();
      r.start();
      const users = Array.from({ length: 30 }, (_, i) => `cu${i}`);
      let appended = 0;
      for (const user of users) {
        const partition = ingestPartitionOf(user, partitions);
        await append(r, 'follow', { user, author: 'a1' }, partition);
        await append(r, 'follow', { user, author: 'a2' }, partition);
        appended += 2;
      }
      await append(r, 'follow', { user: 'cu0', author: '' }, ingestPartitionOf('cu0', partitions));
      appended++;
      await waitFor(
        async () => {
          const all = await Promise.all(users.map((user) => following(r, user)));
          return all.every((authors) => authors.length === 2);
        },
        { timeoutMs: 15_000 },
      );
      const totals = await waitForValue(async () => {
        const b = await backlog(r, partitions);
        return b.every((one) => one.pending === 0 && one.lag === 0) && b;
      });
      const dead = totals.reduce((sum, one) => sum + one.deadLetters, 0);
      let applied = 0;
      for (const consumers of r.consumers) {
        for (const value of (await consumers.metrics.entries.get()).values) {
          if (value.labels.outcome === 'applied') applied += value.value;
        }
      }
      expect(dead).toBe(1);
      expect(applied + dead).toBe(appended);
    },
  );
});
