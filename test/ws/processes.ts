/**
 * Real bubble processes for the SDK tests of this folder: one redis-server started here,
 * `bubble all` / `bubble gateway` as child processes of the built CLI (built once per run by
 * buildOnce), each on a port the test chooses, so a gateway can be started
 * where a client already expects one. Platform calls go over HTTP to any live gateway. The SDK
 * runs in this process with the real `ws` WebSocket and the global fetch, both wrapped only to
 * record what went over the wire. No sleeps: every wait has a deadline.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Badge, BubbleClient, FetchLike, WebSocketConstructor } from '@bubble/client';
import { poolOf, type ClusterStatus } from '@bubble/protocol';
import {
  freePort,
  RoleProcess,
  startRedisServer,
  uniquePrefix,
  waitFor,
  type RedisServerHandle,
  type Role,
} from '@bubble/test-utils';
import { expect } from 'vitest';
import { WebSocket } from 'ws';
import { httpCall, jsonBody } from '../support/http.js';
import { TokenCache } from '../support/tokens.js';

export const API_KEY = 'sdk-test-api-key-71c2e9b05a3d8f4c16';
const JWT_SECRET = 'sdk-test-jwt-secret-5d09e3b8a4f17c62';
const START_DEADLINE_MS = 30_000;

/** A redis-server and the bubble processes started on it (one key prefix). */
export class Deployment {
  readonly processes: RoleProcess[] = [];
  readonly prefix = uniquePrefix('sdk');
  readonly pools = 8;
  readonly tickMs = 200;
  private readonly cwd = mkdtempSync(path.join(tmpdir(), 'bubble-sdk-'));
  private readonly tokens = new TokenCache(JWT_SECRET);
  private counter = 0;

  private constructor(readonly redis: RedisServerHandle) {}

  static async start(): Promise<Deployment> {
    return new Deployment(await startRedisServer());
  }

  /**
   * Spawns `bubble <role>` on `port` (a free one by default) and waits until it listens.
   * `env` adds to (and overrides) the common configuration.
   */
  async spawn(role: Role, env: Record<string, string> = {}, port?: number): Promise<RoleProcess> {
    const proc = new RoleProcess({
      role,
      port: port ?? (await freePort()),
      name: `${role}#${++this.counter}`,
      cwd: this.cwd,
      env: {
        REDIS_URL: this.redis.url,
        BUBBLE_KEY_PREFIX: this.prefix,
        BUBBLE_POOLS: String(this.pools),
        BUBBLE_TICK: String(this.tickMs),
        BUBBLE_LEASE_MS: '1500',
        BUBBLE_API_KEY: API_KEY,
        BUBBLE_JWT_SECRET: JWT_SECRET,
        LOG_LEVEL: 'info',
        ...env,
      },
    });
    this.processes.push(proc);
    await proc.listening(START_DEADLINE_MS);
    return proc;
  }

  describe(): string {
    return this.processes.map((p) => p.describe()).join('\n');
  }

  async close(): Promise<void> {
    await Promise.all(this.processes.map((p) => p.kill().catch(() => undefined)));
    await this.redis.stop();
    rmSync(this.cwd, { recursive: true, force: true });
  }

  // ------------------------------------------------------------------------------ HTTP

  /** A platform call (X-Api-Key) to `gateway`; fails on any status other than `expected`. */
  async platform(
    gateway: RoleProcess,
    method: string,
    route: string,
    body: unknown,
    expected: number,
  ): Promise<unknown> {
    const reply = await httpCall(gateway.url, method, route, { body, apiKey: API_KEY });
    expect(reply.status, `${method} ${route}: ${reply.text}`).toBe(expected);
    return jsonBody(reply);
  }

  async follow(gateway: RoleProcess, user: string, author: string): Promise<void> {
    await this.platform(gateway, 'PUT', `/v1/users/${user}/follows/${author}`, undefined, 204);
  }

  async post(gateway: RoleProcess, author: string, id: string): Promise<void> {
    const body = { author, id, ts: Date.now() - 1000 };
    const reply = await this.platform(gateway, 'POST', '/v1/posts', body, 202);
    expect(reply).toEqual({ accepted: 1, ignored: 0 });
  }

  /** GET /v1/users/{user}/badge: what the platform sees. */
  async badge(gateway: RoleProcess, user: string): Promise<Badge> {
    return (await this.platform(
      gateway,
      'GET',
      `/v1/users/${user}/badge`,
      undefined,
      200,
    )) as Badge;
  }

  async status(gateway: RoleProcess): Promise<ClusterStatus> {
    return (await this.platform(gateway, 'GET', '/v1/cluster', undefined, 200)) as ClusterStatus;
  }

  /** Waits until every pool has an owner that reported a sweep: posts are pushed from now on. */
  async waitSweeping(gateway: RoleProcess): Promise<void> {
    await waitFor(
      async () => {
        const status = await this.status(gateway);
        const swept = new Set(status.sweeps.map((s) => s.node));
        return status.pools.every((p) => p.owner !== null && swept.has(p.owner));
      },
      {
        timeoutMs: 20_000,
        intervalMs: 100,
        message: `the pools never got swept\n${this.describe()}`,
      },
    );
  }

  /** Users online in `user`'s pool, by GET /v1/cluster. */
  async onlineInPool(gateway: RoleProcess, user: string): Promise<number> {
    const status = await this.status(gateway);
    return status.pools[poolOf(user, this.pools)]!.online;
  }

  /** `n` user ids, each in a pool of its own (so a pool's online count is that user's presence). */
  usersInOwnPools(prefix: string, n: number): string[] {
    const tag = Math.random().toString(36).slice(2, 8);
    const users: string[] = [];
    const taken = new Set<number>();
    for (let i = 0; users.length < n; i++) {
      const user = `${prefix}${i}-${tag}`;
      const pool = poolOf(user, this.pools);
      if (taken.has(pool)) continue;
      taken.add(pool);
      users.push(user);
    }
    return users;
  }

  token(user: string): Promise<string> {
    return this.tokens.of(user);
  }
}

// ------------------------------------------------------------------- recording the wire

export interface SocketRecord {
  url: string;
  createdAt: number;
  openedAt?: number;
  closeCode?: number;
}

/** The `ws` WebSocket, noting every socket the SDK creates: its URL, whether it opened, its close. */
export function recordingWebSocket(log: SocketRecord[]): WebSocketConstructor {
  return class RecordingWebSocket extends WebSocket {
    constructor(url: string) {
      super(url, { perMessageDeflate: false });
      const record: SocketRecord = { url, createdAt: Date.now() };
      log.push(record);
      this.on('open', () => (record.openedAt = Date.now()));
      this.on('close', (code: number) => (record.closeCode = code));
    }
  };
}

export interface RequestRecord {
  method: string;
  url: string;
  ifNoneMatch: string | undefined;
  startedAt: number;
  /** When the answer's headers arrived (undefined while in flight, or when it failed). */
  answeredAt?: number;
  status?: number;
  etag?: string | null;
  pollInterval?: string | null;
  failed?: boolean;
}

/** The global fetch, noting every request the SDK makes and the headers of its answer. */
export function recordingFetch(log: RequestRecord[]): FetchLike {
  return async (url, init) => {
    const record: RequestRecord = {
      method: init.method,
      url,
      ifNoneMatch: init.headers['if-none-match'],
      startedAt: Date.now(),
    };
    log.push(record);
    try {
      const res = await fetch(url, init);
      record.answeredAt = Date.now();
      record.status = res.status;
      record.etag = res.headers.get('etag');
      record.pollInterval = res.headers.get('x-poll-interval');
      return res;
    } catch (err) {
      record.failed = true;
      throw err;
    }
  };
}

/** Every state and badge of a client, in order, with the time each came. */
export function watch(client: BubbleClient) {
  const states: Array<{ state: string; at: number }> = [];
  const badges: Array<{ badge: Badge; at: number }> = [];
  client.on('state', (state) => states.push({ state, at: Date.now() }));
  client.on('badge', (badge) => badges.push({ badge, at: Date.now() }));
  return { states, badges };
}

export const etagOf = (badge: Badge): string => `"${badge.epoch}.${badge.version}"`;

export const essentials = (badge: Badge) => ({
  user: badge.user,
  epoch: badge.epoch,
  version: badge.version,
  feed: badge.feed,
});
