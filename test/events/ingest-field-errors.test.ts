/**
 * A poison entry of the ingest stream is dead-lettered with the message an HTTP call of the same
 * body answers: the field and the rule it broke (docs/api.md, "Errors"), never "Invalid input".
 */
import { BadgeService } from '@bubble/badges';
import { IngestConsumers } from '@bubble/events';
import { RedisStore, connectRedis, type RedisClient } from '@bubble/store';
import {
  startRedisServer,
  uniquePrefix,
  waitFor,
  type RedisServerHandle,
} from '@bubble/test-utils';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';

const ID_RULE = 'must be 1 to 64 characters of [A-Za-z0-9_.:@-]';

let server: RedisServerHandle;
let store: RedisStore | undefined;
let admin: RedisClient | undefined;
let consumers: IngestConsumers | undefined;

beforeAll(async () => {
  server = await startRedisServer();
});
afterEach(async () => {
  await consumers?.close();
  admin?.disconnect();
  await store?.close();
});
afterAll(async () => {
  await server.stop();
});

it('dead letters name the field and the rule of a refused post', async () => {
  store = new RedisStore({ url: server.url, keyPrefix: uniquePrefix('ingest-errors'), pools: 4 });
  const service = new BadgeService(store, store.clock);
  admin = connectRedis({ url: server.url }, 'test-admin');
  const now = Date.now();
  const late = now + 3_600_000;
  const bodies: unknown[] = [
    { author: 'bob', id: 'p1' },
    {
      posts: [
        { author: 'bob', id: 'p2', ts: now },
        { author: 'bob', id: 'p3' },
      ],
    },
    { author: 'b b', id: 'p4', ts: now },
    { author: 'bob', id: 'p5', ts: -1 },
    { author: 'bob', id: 'late', ts: late },
  ];
  for (const body of bodies) {
    await admin.xadd(
      store.keys.ingest(0),
      '*',
      'v',
      '1',
      'op',
      'post',
      'body',
      JSON.stringify(body),
    );
  }
  consumers = new IngestConsumers({
    redis: store.redis,
    keys: store.keys,
    service,
    consumer: 'c0',
    partitions: 1,
    claimMs: 300,
    maxDeliveries: 3,
    blockMs: 300,
    logger: pino({ level: 'silent' }),
    backlogEveryMs: 200,
    trimEveryMs: 100,
  });
  consumers.start();
  const letters = await waitFor(
    async () => {
      const entries = (await admin!.xrange(store!.keys.ingestDead(0), '-', '+')) as [
        string,
        string[],
      ][];
      return (
        entries.length === bodies.length &&
        entries.map(([, fields]) => fields[fields.indexOf('error') + 1])
      );
    },
    { timeoutMs: 10_000 },
  );
  expect(letters).toEqual([
    'UB_ERR_BAD_REQUEST: op post: ts: required',
    'UB_ERR_BAD_REQUEST: op post: posts[1].ts: required',
    `UB_ERR_BAD_ID: op post: author: ${ID_RULE}`,
    'UB_ERR_BAD_REQUEST: op post: ts: must be a non-negative integer of ms',
    expect.stringMatching(
      new RegExp(
        `^UB_ERR_FUTURE_TS: ts: must be at most 60 s after now \\(\\d+\\); post bob/late has ${late}$`,
      ),
    ),
  ]);
});
