/**
 * A read that fails answers the last value (docs/api.md, GET /v1/badge): a real gateway process
 * against a real redis-server that is stopped (SIGSTOP: it holds its connections and answers
 * nothing). A user the gateway holds keeps getting their cached badge, marked
 * `X-Bubble-Stale: 1`, with an `X-Poll-Interval` that doubles per stale answer up to its cap; a
 * user it does not hold gets 503 UB_ERR_UNAVAILABLE with `Retry-After`; once Redis answers
 * again the header is gone and the interval is back.
 */
import { mintToken } from '@bubble/gateway';
import {
  freePort,
  RoleProcess,
  startRedisServer,
  waitFor,
  type RedisServerHandle,
} from '@bubble/test-utils';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { buildOnce } from '../support/build.js';
import { httpCall, jsonBody, type Reply } from '../support/http.js';

const API_KEY = 'stale-poll-api-key-3c9d1e7a5b20f864';
const JWT_SECRET = 'stale-poll-jwt-secret-8e2b6d04c1f9a375';
/** docs/api.md: a stale answer's interval never exceeds it. */
const STALE_CAP_SECONDS = 60;
/** BUBBLE_POLL_INTERVAL_S: the calm interval; the gateway doubles it under load, up to 4×. */
const BASE_SECONDS = 1;
const MOST_LOAD_FACTOR = 4;

let redis: RedisServerHandle;
let gateway: RoleProcess;
let stopped = false;

beforeAll(async () => {
  await buildOnce();
  redis = await startRedisServer();
  gateway = new RoleProcess({
    role: 'gateway',
    port: await freePort(),
    env: {
      REDIS_URL: redis.url,
      BUBBLE_KEY_PREFIX: `stale${Date.now().toString(36)}`,
      BUBBLE_POOLS: '8',
      BUBBLE_PUBSUB_CHECK_MS: '300',
      BUBBLE_POLL_INTERVAL_S: String(BASE_SECONDS),
      BUBBLE_API_KEY: API_KEY,
      BUBBLE_JWT_SECRET: JWT_SECRET,
      LOG_LEVEL: 'info',
    },
  });
  await gateway.listening();
}, 120_000);

afterAll(async () => {
  if (stopped) redis?.kill('SIGCONT');
  await gateway?.stop();
  await redis?.stop();
});

async function poll(user: string): Promise<Reply> {
  const token = await mintToken({ secret: JWT_SECRET, user, ttlSeconds: 600 });
  return httpCall(gateway.url, 'GET', '/v1/badge', { token });
}

const interval = (reply: Reply) => Number(reply.headers.get('x-poll-interval'));

it('a held user is answered their last badge, marked stale with a backing-off interval, while Redis is stopped; a cold user 503', async () => {
  const platform = { apiKey: API_KEY };
  const followed = await httpCall(gateway.url, 'PUT', '/v1/users/held/follows/a1', platform);
  expect(followed.status).toBeLessThan(300);
  const posted = await httpCall(gateway.url, 'POST', '/v1/posts', {
    ...platform,
    body: { posts: [{ author: 'a1', id: 'p1', ts: Date.now() - 1000 }] },
  });
  expect(posted.status).toBeLessThan(300);
  const fresh = await poll('held');
  expect(fresh.status).toBe(200);
  expect(fresh.headers.get('x-bubble-stale')).toBeNull();
  expect(interval(fresh)).toBeGreaterThanOrEqual(BASE_SECONDS);
  expect(interval(fresh)).toBeLessThanOrEqual(BASE_SECONDS * MOST_LOAD_FACTOR);
  const badge = jsonBody(fresh) as { feed: number; version: number; epoch: string };
  expect(badge.feed).toBe(1);

  redis.kill('SIGSTOP');
  stopped = true;
  const firstStale = await waitFor<Reply | undefined>(
    async () => {
      const reply = await poll('held');
      expect(reply.status).toBe(200);
      return reply.headers.get('x-bubble-stale') === '1' ? reply : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 200 },
  );
  expect(jsonBody(firstStale!)).toEqual(badge);
  const intervals = [interval(firstStale!)];
  for (let i = 0; i < 7; i++) {
    const reply = await poll('held');
    expect(reply.status).toBe(200);
    expect(reply.headers.get('x-bubble-stale')).toBe('1');
    intervals.push(interval(reply));
  }
  // The k-th stale answer in a row: the interval of the moment (calm or loaded) times 2^k.
  intervals.forEach((seconds, i) => {
    const doubled = BASE_SECONDS * 2 ** (i + 1);
    expect(seconds).toBeGreaterThanOrEqual(Math.min(STALE_CAP_SECONDS, doubled));
    expect(seconds).toBeLessThanOrEqual(Math.min(STALE_CAP_SECONDS, doubled * MOST_LOAD_FACTOR));
  });
  expect(intervals.at(-1)).toBe(STALE_CAP_SECONDS);

  const cold = await poll('cold');
  expect(cold.status).toBe(503);
  expect(cold.headers.get('retry-after')).toMatch(/^\d+$/);
  expect(jsonBody(cold)).toMatchObject({ error: { code: 'UB_ERR_UNAVAILABLE' } });

  redis.kill('SIGCONT');
  stopped = false;
  const back = await waitFor<Reply | undefined>(
    async () => {
      const reply = await poll('held');
      return reply.status === 200 && reply.headers.get('x-bubble-stale') === null
        ? reply
        : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 200 },
  );
  expect(interval(back!)).toBeLessThanOrEqual(BASE_SECONDS * MOST_LOAD_FACTOR);
  expect(jsonBody(back!)).toMatchObject({ feed: 1, epoch: badge.epoch });
  await waitFor(async () => ((await poll('cold')).status === 200 ? true : undefined), {
    timeoutMs: 30_000,
    intervalMs: 200,
  });
}, 120_000);
