/**
 * A role started before its Redis is reachable keeps running instead of exiting: /healthz 200
 * (alive, so a scheduler does not restart it), /readyz 503 and every other route 503 while it
 * retries with backoff, one log line per attempt (ioredis' own reconnect errors never printed);
 * once redis-server starts on that port (and, for a core, a majority of its lock quorum), it
 * starts, /readyz answers 200 and it serves.
 */
import {
  freePort,
  RoleProcess,
  startRedisServer,
  waitFor,
  type LogLine,
  type RedisServerHandle,
  type Role,
} from '@bubble/test-utils';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { WAITING_LOG } from '../../packages/cli/src/roles/wait-for-store.js';
import { buildOnce } from '../support/build.js';
import { httpCall, jsonBody } from '../support/http.js';

const API_KEY = 'redis-at-boot-api-key-5b1e0c9a73d2f846';
const JWT_SECRET = 'redis-at-boot-jwt-secret-0d6a2f8e93b4c571';
const RETRY_CAP_MS = 1_000;
/** Long enough for a few backoff steps, short against the cap. */
const WAITING_STEPS = 4;
/** The cap, one attempt's timeout and a start: how soon a role must be ready once Redis is. */
const READY_DEADLINE_MS = RETRY_CAP_MS + 2_000 + 10_000;

interface Boot {
  role: RoleProcess;
  redisPort: number;
  lockPorts: number[];
}

const servers: RedisServerHandle[] = [];
const roles: RoleProcess[] = [];

async function bootWithoutRedis(role: Role, lockQuorum = false): Promise<Boot> {
  const redisPort = await freePort();
  const lockPorts = lockQuorum ? await Promise.all([0, 1, 2].map(() => freePort())) : [];
  const env: Record<string, string> = {
    REDIS_URL: `redis://127.0.0.1:${redisPort}`,
    BUBBLE_KEY_PREFIX: `boot${Date.now().toString(36)}`,
    BUBBLE_POOLS: '8',
    BUBBLE_LEASE_MS: '1500',
    BUBBLE_TICK: '200',
    BUBBLE_START_RETRY_MAX_MS: String(RETRY_CAP_MS),
    BUBBLE_API_KEY: API_KEY,
    BUBBLE_JWT_SECRET: JWT_SECRET,
    LOG_LEVEL: 'info',
  };
  if (lockQuorum) {
    env.BUBBLE_LOCK_REDIS_URLS = lockPorts.map((port) => `redis://127.0.0.1:${port}`).join(',');
  }
  const proc = new RoleProcess({ role, port: await freePort(), env });
  roles.push(proc);
  return { role: proc, redisPort, lockPorts };
}

async function status(proc: RoleProcess, path: string): Promise<number> {
  return (await httpCall(proc.url, 'GET', path)).status;
}

const waitingLines = (proc: RoleProcess): LogLine[] => proc.logs(WAITING_LOG);

/** Alive, not ready, refusing the rest, and retrying: `WAITING_STEPS` attempts logged. */
async function expectWaiting(proc: RoleProcess, since = 0): Promise<void> {
  await proc.waitHttpOk(`${proc.url}/healthz`, 15_000);
  const readyz = await httpCall(proc.url, 'GET', '/readyz');
  expect(readyz.status).toBe(503);
  expect(jsonBody(readyz)).toMatchObject({ error: { code: 'UB_ERR_UNAVAILABLE' } });
  await proc.waitLog(
    () => waitingLines(proc).filter((l) => l.time >= since).length >= WAITING_STEPS,
    15_000,
    `never logged ${WAITING_STEPS} backoff steps`,
  );
  expect(proc.alive).toBe(true);
  expect(await status(proc, '/healthz')).toBe(200);
  expect(await status(proc, '/readyz')).toBe(503);
}

/** One line per attempt, numbered in order, each the backoff's wait after the one before. */
function expectOneLinePerStep(proc: RoleProcess): number {
  const lines = waitingLines(proc);
  lines.forEach((line, i) => {
    expect(line.attempt).toBe(i + 1);
    expect(line.retryInMs as number).toBeLessThanOrEqual(RETRY_CAP_MS);
    const next = lines[i + 1];
    // Timestamps are whole milliseconds; the wait itself is never shorter than asked.
    if (next) expect(next.time - line.time).toBeGreaterThanOrEqual((line.retryInMs as number) - 1);
  });
  // ioredis' unhandled error events print "[ioredis] Unhandled error event" on every reconnect.
  expect(proc.other).not.toMatch(/ioredis/i);
  // Nor does each probe or early request log an error of its own.
  expect(proc.logs('request failed')).toEqual([]);
  return lines.length;
}

async function expectReady(proc: RoleProcess): Promise<number> {
  const since = Date.now();
  await proc.waitHttpOk(`${proc.url}/readyz`, READY_DEADLINE_MS);
  await proc.listening(5_000);
  expect(proc.logs('the store is reachable').length).toBe(1);
  return Date.now() - since;
}

/** The platform and client routes work: a post reaches a follower's badge. */
async function expectServes(proc: RoleProcess): Promise<void> {
  const platform = (method: string, path: string, body?: unknown) =>
    httpCall(proc.url, method, path, { apiKey: API_KEY, body });
  expect((await platform('PUT', '/v1/users/reader/follows', { authors: ['writer'] })).status).toBe(
    204,
  );
  expect(
    (await platform('POST', '/v1/posts', { author: 'writer', id: 'p1', ts: Date.now() - 1000 }))
      .status,
  ).toBe(202);
  await waitFor(
    async () => {
      const reply = await platform('GET', '/v1/users/reader/badge');
      return reply.status === 200 && (jsonBody(reply) as { feed: number }).feed === 1;
    },
    { timeoutMs: 10_000, message: 'the post never reached the badge' },
  );
}

/**
 * Starts the redis-server `proc` waits for on `port`, then expects `proc` ready within the
 * deadline, one log line per backoff step, and serving.
 */
async function startRedisThenExpectServing(proc: RoleProcess, port: number, name: string) {
  servers.push(await startRedisServer({ port }));
  const readyAfterMs = await expectReady(proc);
  const steps = expectOneLinePerStep(proc);
  await expectServes(proc);
  console.log(
    `[redis at boot] ${name}: ${steps} backoff lines; ready ${readyAfterMs} ms after Redis`,
  );
}

describe('a role started before Redis is reachable', () => {
  beforeAll(() => buildOnce(), 300_000);
  afterEach(async () => {
    await Promise.all(roles.splice(0).map((proc) => proc.kill().catch(() => undefined)));
    await Promise.all(servers.splice(0).map((server) => server.stop()));
  });

  it('a gateway is alive, not ready, refuses requests; ready and serving once Redis starts', async () => {
    const { role: gateway, redisPort } = await bootWithoutRedis('gateway');
    await expectWaiting(gateway);
    const early = await httpCall(gateway.url, 'GET', '/v1/users/reader/badge', {
      apiKey: API_KEY,
    });
    expect(early.status).toBe(503);
    expect(jsonBody(early)).toMatchObject({ error: { code: 'UB_ERR_UNAVAILABLE' } });

    await startRedisThenExpectServing(gateway, redisPort, 'gateway');
  }, 60_000);

  it('a core waits for the store, then for a majority of its lock quorum, then is ready', async () => {
    const { role: core, redisPort, lockPorts } = await bootWithoutRedis('core', true);
    await expectWaiting(core);

    // The store alone is not enough: the core cannot lease a pool without the quorum.
    servers.push(await startRedisServer({ port: redisPort }));
    const storeUpAt = Date.now();
    await expectWaiting(core, storeUpAt);
    expect(waitingLines(core).at(-1)!.reason).toMatch(/lock quorum: 0 of 3/);

    servers.push(
      ...(await Promise.all(lockPorts.slice(0, 2).map((port) => startRedisServer({ port })))),
    );
    const readyAfterMs = await expectReady(core);
    const steps = expectOneLinePerStep(core);
    console.log(
      `[redis at boot] core: ${steps} backoff lines; ready ${readyAfterMs} ms after the quorum`,
    );
  }, 60_000);

  it('bubble all waits, then serves', async () => {
    const { role: all, redisPort } = await bootWithoutRedis('all');
    await expectWaiting(all);
    await startRedisThenExpectServing(all, redisPort, 'all');
  }, 60_000);
});
