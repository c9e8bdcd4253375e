import { BadgeService } from '@bubble/badges';
import { ManualClock } from '@bubble/protocol';
import { RedisStore } from '@bubble/store';
import { startRedisServer } from '@bubble/test-utils';
import { Redis } from 'ioredis';
import type { BenchOptions } from './bench-options.js';
import { callsBetween, commandCalls, sum } from './redis-probe.js';
import { percentile } from './workload.js';

export interface ConversationsOptions extends BenchOptions {
  /** Conversations of the user whose list is read (two members each). */
  memberships: number;
  /** Members of the large group the user is also in, and that the timed messages go to. */
  largeGroup: number;
  /** Members of the small group timed beside it. */
  smallGroup: number;
  /** BUBBLE_LARGE_GROUP of the store. */
  largeThreshold: number;
  /** Timed list reads (after a few untimed ones). */
  reads: number;
  /** Timed messages into each group. */
  messages: number;
}

export const CONVERSATIONS_DEFAULTS: ConversationsOptions = {
  memberships: 5000,
  largeGroup: 10_000,
  smallGroup: 50,
  largeThreshold: 500,
  reads: 300,
  messages: 100,
  log: () => {},
};

const NOW = Date.UTC(2026, 10, 30);
const READER = 'reader';

/**
 * The conversation list at scale (issue 18): GET /v1/conversations's read for a user in 5,000
 * conversations, and one message into a 10,000-member group (and into a small one), on the
 * scenario's own redis-server. Redis commands come from INFO commandstats (those the scripts run
 * included), bytes from total_net_output_bytes, keys written from keyspace notifications
 * (key modifications per message, and the distinct keys all the messages touched).
 */
export async function benchConversations(partial: Partial<ConversationsOptions> = {}) {
  const options = { ...CONVERSATIONS_DEFAULTS, ...partial };
  const redis = await startRedisServer();
  const store = new RedisStore({
    url: redis.url,
    keyPrefix: 'bench',
    pools: 100,
    largeGroup: options.largeThreshold,
  });
  const admin = new Redis(redis.url);
  const watcher = new Redis(redis.url);
  try {
    const clock = new ManualClock(NOW);
    const service = new BadgeService(store, clock, { followCap: 2000 });
    options.log(`conversations: ${options.memberships} conversations of one user`);
    const seedBatch = 200;
    for (let i = 0; i < options.memberships; i += seedBatch) {
      const ids = Array.from(
        { length: Math.min(seedBatch, options.memberships - i) },
        (_, j) => i + j,
      );
      await Promise.all(ids.map((c) => service.replaceMembers(`c${c}`, [READER, `peer${c}`])));
      await Promise.all(
        ids.map((c) =>
          service.ingestMessages(`c${c}`, [
            { seq: 1 + (c % 7), from: `peer${c}`, ts: NOW - c * 1000, preview: { text: `m${c}` } },
          ]),
        ),
      );
    }
    const members = (prefix: string, n: number) =>
      Array.from({ length: n }, (_, i) => (i === 0 ? READER : `${prefix}${i}`));
    options.log(`conversations: a group of ${options.largeGroup} and one of ${options.smallGroup}`);
    await service.replaceMembers('large', members('l', options.largeGroup));
    await service.replaceMembers('small', members('s', options.smallGroup));

    // The list read.
    for (let r = 0; r < 5; r++) await service.conversationList(READER, 100);
    const readTimes: number[] = [];
    const beforeCalls = await commandCalls(admin);
    const beforeBytes = await outputBytes(admin);
    for (let r = 0; r < options.reads; r++) {
      const started = performance.now();
      const list = await service.conversationList(READER, 100);
      readTimes.push(performance.now() - started);
      if (list.length !== 100) throw new Error(`the list has ${list.length} entries`);
    }
    readTimes.sort((a, b) => a - b);
    const readBytes = (await outputBytes(admin)) - beforeBytes;
    const readCalls = callsBetween(beforeCalls, await commandCalls(admin));

    // Messages, each timed alone; commands from commandstats, keys from keyspace events.
    await admin.config('SET', 'notify-keyspace-events', 'KA');
    const keysWritten = new Map<string, number>();
    let events = 0;
    let markerSeen: () => void = () => {};
    await watcher.psubscribe('__keyspace@0__:*');
    await watcher.subscribe('bench:marker');
    watcher.on('pmessage', (_pattern: string, channel: string) => {
      events++;
      const key = channel.slice(channel.indexOf(':') + 1);
      keysWritten.set(key, (keysWritten.get(key) ?? 0) + 1);
    });
    watcher.on('message', () => markerSeen());
    const drained = async () => {
      const seen = new Promise<void>((resolve) => (markerSeen = resolve));
      await admin.publish('bench:marker', '1');
      await seen;
    };
    const messagesInto = async (conversation: string, from: string) => {
      await service.ingestMessages(conversation, [{ seq: 1, from, ts: clock.now() }]);
      await drained();
      keysWritten.clear();
      events = 0;
      const times: number[] = [];
      const before = await commandCalls(admin);
      for (let m = 0; m < options.messages; m++) {
        clock.advance(10);
        const started = performance.now();
        await service.ingestMessages(conversation, [
          { seq: m + 2, from, ts: clock.now(), preview: { text: `hello ${m}` } },
        ]);
        times.push(performance.now() - started);
      }
      const calls = callsBetween(before, await commandCalls(admin));
      calls.delete('publish');
      await drained();
      times.sort((a, b) => a - b);
      const figures = {
        p50Ms: round(percentile(times, 50)),
        p99Ms: round(percentile(times, 99)),
        redisCmds: round(sum(calls.values()) / options.messages),
        keysWritten: round(events / options.messages),
        distinctKeys: keysWritten.size,
      };
      keysWritten.clear();
      events = 0;
      return figures;
    };
    options.log(`conversations: ${options.messages} messages into each group`);
    const large = await messagesInto('large', 'l1');
    const small = await messagesInto('small', 's1');

    return {
      scenario: 'conversations',
      memberships: options.memberships,
      largeGroup: options.largeGroup,
      smallGroup: options.smallGroup,
      largeThreshold: options.largeThreshold,
      listReadP50Ms: round(percentile(readTimes, 50)),
      listReadP99Ms: round(percentile(readTimes, 99)),
      listReadRedisCmds: round(sum(readCalls.values()) / options.reads),
      listReadRedisBytes: Math.round(readBytes / options.reads),
      largeMessageP50Ms: large.p50Ms,
      largeMessageP99Ms: large.p99Ms,
      largeMessageRedisCmds: large.redisCmds,
      largeMessageKeysWritten: large.keysWritten,
      largeMessageDistinctKeys: large.distinctKeys,
      smallMessageP50Ms: small.p50Ms,
      smallMessageRedisCmds: small.redisCmds,
      smallMessageKeysWritten: small.keysWritten,
    };
  } finally {
    watcher.disconnect();
    admin.disconnect();
    await store.close().catch(() => {});
    await redis.stop();
  }
}

async function outputBytes(admin: Redis): Promise<number> {
  const text = await admin.info('stats');
  return Number(/^total_net_output_bytes:(\d+)/m.exec(text)?.[1] ?? 0);
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}
