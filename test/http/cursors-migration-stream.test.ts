/**
 * The ingest stream's `cursors` op (docs/api.md, "Events through a Redis Stream"): the body of
 * `POST /v1/cursors`, validated as the HTTP body is, applied by a gateway's consumer exactly as
 * the route applies it; a bad body is dead-lettered whole with the route's error code. Against
 * a real redis-server, entries XADDed as a platform appends them.
 */
import { BadgeService, parsePlatformOp, platformOpEntity } from '@bubble/badges';
import { IngestConsumers } from '@bubble/events';
import { RedisStore, connectRedis, type RedisClient } from '@bubble/store';
import {
  startRedisServer,
  uniquePrefix,
  waitFor,
  type RedisServerHandle,
} from '@bubble/test-utils';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

describe('the ingest stream op `cursors`', () => {
  let server: RedisServerHandle;
  const closing: Array<() => Promise<void> | void> = [];
  beforeAll(async () => {
    server = await startRedisServer();
  });
  afterEach(async () => {
    for (const close of closing.splice(0).reverse()) await close();
  });
  afterAll(async () => {
    await server.stop();
  });

  it('parses as the HTTP body does; its entity is the first user', () => {
    const body = { users: [{ user: 'u1', notices: 3 }, { user: 'u2' }] };
    expect(platformOpEntity('cursors', body)).toBe('u1');
    expect(parsePlatformOp('cursors', body)).toMatchObject({ kind: 'call', op: 'cursors' });
    expect(() => parsePlatformOp('cursors', { users: [{ user: 'bad id' }] })).toThrow(
      expect.objectContaining({ code: 'UB_ERR_BAD_ID' }),
    );
    expect(() => parsePlatformOp('cursors', { users: [] })).toThrow(
      expect.objectContaining({ code: 'UB_ERR_BAD_REQUEST' }),
    );
  });

  it('moves the cursors of a valid entry and dead-letters a bad one whole', async () => {
    const store = new RedisStore({ url: server.url, keyPrefix: uniquePrefix('cursors'), pools: 8 });
    closing.push(() => store.close());
    const service = new BadgeService(store, store.clock);
    const admin: RedisClient = connectRedis({ url: server.url }, 'test-admin');
    closing.push(() => admin.disconnect());
    await service.replaceMembers('c7', ['u1', 'peer']);
    await service.ingestMessages(
      'c7',
      [1, 2, 3, 4].map((seq) => ({ seq, from: 'peer' })),
    );
    const append = (body: unknown) =>
      admin.xadd(
        store.keys.ingest(0),
        '*',
        'v',
        '1',
        'op',
        'cursors',
        'body',
        JSON.stringify(body),
      );
    await append({
      users: [
        { user: 'u1', feed: 1000 },
        { user: 'u 2', notices: 9 },
      ],
    });
    await append({
      users: [
        { user: 'u1', feed: 5000, notices: 7, conversations: { c7: 3 } },
        { user: 'u3', notices: 2 },
      ],
    });
    const consumers = new IngestConsumers({
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
    closing.push(() => consumers.close());
    consumers.start();

    await waitFor(async () => (await store.marks.state('u3')).seen === 2, { timeoutMs: 10_000 });
    expect(await store.cursors.feedReadAt('u1')).toBe(5000);
    expect((await store.marks.state('u1')).seen).toBe(7);
    expect((await service.badge('u1')).conversations).toEqual({ c7: 1 });
    await waitFor(async () => (await admin.xlen(store.keys.ingestDead(0))) === 1, {
      timeoutMs: 10_000,
    });
    const [[, fields]] = (await admin.xrange(store.keys.ingestDead(0), '-', '+')) as [
      [string, string[]],
    ];
    expect(fields[fields.indexOf('error') + 1]).toMatch(
      /^UB_ERR_BAD_ID: op cursors: users\[1\]\.user/,
    );
    // Nothing of the bad entry was applied, not even its valid first user.
    expect(await store.marks.state('u2')).toEqual({ seen: null, clicks: {} });
  });
});
