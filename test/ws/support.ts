/**
 * Live-badge test rig: an in-process HttpGateway with `live` enabled (the WebSocket endpoint)
 * over a MemoryStore or a RedisStore on a real redis-server, plus a CoreNode and a SchedulerNode
 * on the same store (as `bubble all` wires them), so that posts produce pushes; and real `ws`
 * client sockets that record every frame they receive. No sleeps: every wait has a deadline.
 */
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { rmSync } from 'node:fs';
import { CoreNode } from '@bubble/core';
import { BadgeService } from '@bubble/badges';
import { HttpGateway, mintToken, type ClientLimitOptions } from '@bubble/gateway';
import { systemClock, type Badge } from '@bubble/protocol';
import { SchedulerNode } from '@bubble/server';
import {
  MemoryPoolLocks,
  MemoryStore,
  RedisKeys,
  RedisStore,
  RedlockPoolLocks,
  type BubbleStore,
  type PoolLocks,
} from '@bubble/store';
import {
  startRedisServer,
  uniquePrefix,
  waitFor,
  type RedisServerHandle,
} from '@bubble/test-utils';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { httpCall, type Reply } from '../support/http.js';

export type { Badge } from '@bubble/protocol';
export { call, type Reply } from '../support/http.js';

export const API_KEY = 'ws-test-api-key-3b7e91c05d4a28f6e1b3';
export const JWT_SECRET = 'ws-test-jwt-secret-0c8d4f2a6e19b73c58';
export const ENGINES = ['memory', 'redis'] as const;
export type Engine = (typeof ENGINES)[number];

/** Close codes of docs/protocol.md: the gateway's own table. */
export { CLOSE } from '@bubble/protocol';

const POOLS = 16;
const TICK_MS = 100;
const LEASE_MS = 1500;

// ------------------------------------------------------------------------------ the rig

export interface LiveOptions {
  jwtAudience?: string;
  allowedOrigins?: string[];
  maxPayload?: number;
  presenceTtlMs?: number;
  /** Start a CoreNode and a SchedulerNode (default true): needed for posts to push. */
  core?: boolean;
  /**
   * Users the core re-checks against the store per sweep (its default when unset). 0 turns the
   * safety net off, so a test sees only what the core's following of the change logs pushes.
   */
  reconcilePerSweep?: number;
  /** The gateway's protocol-ping interval (its default, 25 s, when unset). */
  heartbeatMs?: number;
  /** How long a ping waits for its pong (the gateway's default, 8 s, when unset). */
  pongTimeoutMs?: number;
  /** Connections the gateway accepts before it closes new ones with 1013. */
  maxConnections?: number;
  /** The gateway's check for lost pub/sub messages (BUBBLE_PUBSUB_CHECK_MS; 0 none). */
  pubsubCheckMs?: number;
  /** A drain's pace (BUBBLE_WS_DRAIN_RATE, BUBBLE_WS_DRAIN_MAX_MS); the gateway's defaults unset. */
  drainRate?: number;
  drainMaxMs?: number;
  /** Connections being admitted at once, and the wait for an auth frame (the gateway's defaults). */
  maxAdmitting?: number;
  authTimeoutMs?: number;
  /** The client routes' limits, which `read` and `watch` frames draw on too (their defaults). */
  clientLimits?: ClientLimitOptions;
}

export interface LiveApp {
  engine: Engine;
  url: string;
  wsUrl: string;
  port: number;
  gateway: HttpGateway;
  service: BadgeService;
  store: BubbleStore;
  core: CoreNode | undefined;
  /** Lines the gateway, core and scheduler logged at warn or above. */
  logs: Array<{ level: number; msg: string; [field: string]: unknown }>;
  /**
   * A second way into the same gateway: a UNIX socket whose connections are handed to the
   * gateway's HTTP server (node:http's documented 'connection' injection). Its kernel buffers
   * are small (~64 KiB), unlike loopback TCP's (MiBs): slow consumers show up quickly.
   * Returns the `ws+unix:` URL of /v1/ws.
   */
  unixWsUrl(): Promise<string>;
  close(): Promise<void>;
}

/**
 * Registers the lifecycle of one engine in the calling describe block: one redis-server per
 * file for Redis (every app gets its own key prefix), and every app started through the
 * returned `start` closed after each test.
 */
export function useEngine(engine: Engine): { start(options?: LiveOptions): Promise<LiveApp> } {
  let redis: RedisServerHandle | undefined;
  const apps: LiveApp[] = [];
  if (engine === 'redis') {
    beforeAll(async () => {
      redis = await startRedisServer();
    });
    afterAll(async () => {
      await redis?.stop();
      redis = undefined;
    });
  }
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
  });
  return {
    async start(options: LiveOptions = {}): Promise<LiveApp> {
      const app = await startLive(engine, redis?.url, options);
      apps.push(app);
      return app;
    },
  };
}

async function startLive(
  engine: Engine,
  redisUrl: string | undefined,
  options: LiveOptions,
): Promise<LiveApp> {
  const logs: LiveApp['logs'] = [];
  const logger = pino(
    { level: 'warn' },
    { write: (line: string) => void logs.push(JSON.parse(line) as LiveApp['logs'][number]) },
  );
  let store: BubbleStore;
  let locks: PoolLocks;
  let lockClient: Redis | undefined;
  if (engine === 'memory') {
    store = new MemoryStore({ pools: POOLS });
    locks = new MemoryPoolLocks();
  } else {
    if (!redisUrl) throw new Error('redis-server did not start');
    const keyPrefix = uniquePrefix('ws');
    store = new RedisStore({ url: redisUrl, keyPrefix, pools: POOLS });
    lockClient = new Redis(redisUrl, { enableOfflineQueue: false, maxRetriesPerRequest: 0 });
    await new Promise<void>((resolve, reject) => {
      lockClient!.once('ready', resolve);
      lockClient!.once('error', reject);
    });
    locks = new RedlockPoolLocks({
      clients: [lockClient],
      keys: new RedisKeys(keyPrefix, POOLS),
    });
  }
  const service = new BadgeService(store, systemClock, { followCap: 100 });
  const id = randomBytes(3).toString('hex');
  const gateway = new HttpGateway({
    service,
    auth: { apiKey: API_KEY, jwtSecret: JWT_SECRET, jwtAudience: options.jwtAudience },
    logger,
    drainTimeoutMs: 1000,
    ...(options.clientLimits ? { clientLimits: options.clientLimits } : {}),
    live: {
      gatewayId: `gateway-${id}`,
      presenceTtlMs: options.presenceTtlMs ?? 10_000,
      maxPayload: options.maxPayload,
      allowedOrigins: options.allowedOrigins,
      heartbeatMs: options.heartbeatMs,
      pongTimeoutMs: options.pongTimeoutMs,
      maxConnections: options.maxConnections,
      pubsubCheckMs: options.pubsubCheckMs,
      drainRate: options.drainRate,
      drainMaxMs: options.drainMaxMs,
      maxAdmitting: options.maxAdmitting,
      authTimeoutMs: options.authTimeoutMs,
    },
  });
  const address = await gateway.listen(0, '127.0.0.1');
  const url = `http://127.0.0.1:${address.port}`;

  let core: CoreNode | undefined;
  let scheduler: SchedulerNode | undefined;
  if (options.core !== false) {
    core = new CoreNode({
      id: `core-${id}`,
      store,
      locks,
      clock: systemClock,
      logger,
      lookbackDays: 7,
      leaseMs: LEASE_MS,
      tickMs: TICK_MS,
      url,
      ...(options.reconcilePerSweep !== undefined
        ? { reconcilePerSweep: options.reconcilePerSweep }
        : {}),
    });
    await core.start();
    scheduler = new SchedulerNode({
      id: `server-${id}`,
      store,
      logger,
      leaseMs: LEASE_MS,
      tick: String(TICK_MS),
      url,
    });
    await scheduler.start();
    const started = core;
    await waitFor(() => started.ownedPools.length === POOLS, {
      timeoutMs: 15_000,
      message: 'the core never took every pool',
    });
  }
  let unix: { server: net.Server; file: string } | undefined;
  let closing: Promise<void> | undefined;
  return {
    engine,
    url,
    wsUrl: `ws://127.0.0.1:${address.port}/v1/ws`,
    port: address.port,
    gateway,
    service,
    store,
    core,
    logs,
    async unixWsUrl() {
      if (!unix) {
        const file = path.join(tmpdir(), `bubble-ws-${process.pid}-${id}.sock`);
        rmSync(file, { force: true });
        const server = net.createServer((socket) => gateway.server.emit('connection', socket));
        await new Promise<void>((resolve) => server.listen(file, resolve));
        unix = { server, file };
      }
      return `ws+unix://${unix.file}:/v1/ws`;
    },
    close() {
      closing ??= (async () => {
        if (unix) {
          const { server, file } = unix;
          await new Promise<void>((resolve) => server.close(() => resolve()));
          rmSync(file, { force: true });
        }
        await gateway.close();
        await core?.close();
        await scheduler?.close();
        await locks.close();
        lockClient?.disconnect();
        await store.close();
      })();
      return closing;
    },
  };
}

/** Resolves once the core has finished `n` more sweeps (a change posted before is written). */
export async function sweeps(app: LiveApp, n = 2): Promise<void> {
  const core = app.core;
  if (!core) return;
  const target = core.totals.sweeps + n;
  await waitFor(() => core.totals.sweeps >= target, {
    timeoutMs: 10_000,
    message: `the core did not sweep ${n} more times`,
  });
}

// ----------------------------------------------------------------------------- HTTP calls

export function platform(
  app: LiveApp,
  method: string,
  path: string,
  body?: unknown,
): Promise<Reply> {
  return httpCall(app.url, method, path, { body, apiKey: API_KEY });
}

export async function follow(app: LiveApp, user: string, author: string): Promise<void> {
  const reply = await platform(app, 'PUT', `/v1/users/${user}/follows/${author}`);
  expect(reply.status, reply.text).toBe(204);
}

export interface PostInput {
  author: string;
  id: string;
  ts: number;
}

/** POST /v1/posts in batches of at most 1000; every post must be accepted. */
export async function ingest(app: LiveApp, posts: PostInput[]): Promise<void> {
  for (let i = 0; i < posts.length; i += 1000) {
    const batch = posts.slice(i, i + 1000);
    const reply = await platform(app, 'POST', '/v1/posts', { posts: batch });
    expect(reply.status, reply.text).toBe(202);
    expect(JSON.parse(reply.text)).toEqual({ accepted: batch.length, ignored: 0 });
  }
}

export async function platformBadge(app: LiveApp, user: string): Promise<Badge> {
  const reply = await platform(app, 'GET', `/v1/users/${user}/badge`);
  expect(reply.status, reply.text).toBe(200);
  return JSON.parse(reply.text) as Badge;
}

export function tokenFor(user: string, ttlSeconds = 600, audience?: string): Promise<string> {
  return mintToken({ secret: JWT_SECRET, user, ttlSeconds, audience });
}
