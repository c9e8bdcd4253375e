/**
 * A real bubble cluster for crash tests: redis-servers started here (three independent masters
 * for the Redlock quorum, a fourth as the main store), `bubble server|core|gateway` as child
 * processes of the built CLI, their JSON log lines parsed as they arrive, and a direct Redis
 * connection to read what the cores wrote (badges, fences, stale-write counters, published
 * changes). No sleeps: everything waits for a condition with a deadline.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  decodeBadgeState,
  decodeChanges,
  type ClusterStatus,
  type SweepReport,
} from '@bubble/protocol';
import { RedisKeys } from '@bubble/store';
import {
  freePort,
  RoleProcess,
  restartRedisServer,
  startRedisServer,
  uniquePrefix,
  waitFor,
  type RedisServerHandle,
  type RedisServerOptions,
} from '@bubble/test-utils';
import { Redis } from 'ioredis';
import { expect } from 'vitest';
import { httpCall, jsonBody } from '../support/http.js';
import { TokenCache } from '../support/tokens.js';
import { HoldingProxy } from './holding-proxy.js';
import { fenceRegressions, heldPools, type Published } from './pool-tenures.js';

export const API_KEY = 'cluster-test-api-key-4e21a9c07f3b5d86';
export const JWT_SECRET = 'cluster-test-jwt-secret-8c3f0a9d71e2b546';
const START_DEADLINE_MS = 20_000;

export type RoleName = 'server' | 'core' | 'gateway';

// ------------------------------------------------------------------------------------ cluster

export interface ClusterOptions {
  label: string;
  leaseMs?: number;
  tickMs?: number;
  pools?: number;
  /** The main store's redis-server options (e.g. AOF in a kept dir, for restartStore). */
  store?: RedisServerOptions;
}

export interface Reply {
  status: number;
  body: unknown;
}

export class Cluster {
  readonly processes: RoleProcess[] = [];
  readonly keys: RedisKeys;
  readonly prefix: string;
  readonly leaseMs: number;
  readonly tickMs: number;
  readonly pools: number;
  readonly published: Published[] = [];
  /** Change messages whose writes did not share one fence (none expected). */
  readonly malformed: string[] = [];
  readonly ticks: Array<{ seq: number; receivedAt: number }> = [];
  redis!: Redis;
  private readonly servers: RedisServerHandle[] = [];
  private readonly proxies: HoldingProxy[] = [];
  private subscriber: Redis | undefined;
  private tickSubscriber: Redis | undefined;
  private lockClients: Redis[] | undefined;
  private readonly cwd: string;
  private readonly tokens = new TokenCache(JWT_SECRET);
  private gatewayUrl: string | undefined;
  private counter = 0;

  private constructor(options: ClusterOptions) {
    this.prefix = uniquePrefix(options.label);
    this.leaseMs = options.leaseMs ?? 1500;
    this.tickMs = options.tickMs ?? 200;
    this.pools = options.pools ?? 100;
    this.keys = new RedisKeys(this.prefix, this.pools);
    this.cwd = mkdtempSync(path.join(tmpdir(), 'bubble-cluster-'));
  }

  static async start(options: ClusterOptions): Promise<Cluster> {
    const cluster = new Cluster(options);
    try {
      // Three independent lock masters and the main store.
      const servers = await Promise.all(
        [0, 1, 2, 3].map((i) => startRedisServer(i === 3 ? options.store : {})),
      );
      cluster.servers.push(...servers);
      cluster.redis = new Redis(cluster.storeUrl, { maxRetriesPerRequest: 1 });
      return cluster;
    } catch (err) {
      await cluster.close();
      throw err;
    }
  }

  get storeUrl(): string {
    return this.servers[3]!.url;
  }

  /** kill -9 of the main store, then a new one on its port: from `options.dir`, or empty. */
  async restartStore(options: Omit<RedisServerOptions, 'port'> = {}): Promise<void> {
    this.servers[3] = await restartRedisServer(this.servers[3]!, options);
  }

  /**
   * A holding proxy in front of the main store (default), or of lock server `lock` (0..2), for
   * one process's REDIS_URL or BUBBLE_LOCK_REDIS_URLS.
   */
  async proxy(lock?: number): Promise<HoldingProxy> {
    const proxy = await HoldingProxy.start(this.servers[lock ?? 3]!.port);
    this.proxies.push(proxy);
    return proxy;
  }

  get lockUrls(): string[] {
    return this.servers.slice(0, 3).map((s) => s.url);
  }

  /** How long the leader may take to spread the pools over a new set of cores. */
  get settleMs(): number {
    return 3 * this.leaseMs + 5_000;
  }

  /** Spawns `bubble <role>` (under `runUnder`, e.g. faketime, when given) and waits until it listens. */
  async spawn(
    role: RoleName,
    extraEnv: Record<string, string> = {},
    runUnder?: readonly string[],
  ): Promise<RoleProcess> {
    const proc = new RoleProcess({
      role,
      runUnder,
      port: await freePort(),
      name: `${role}#${++this.counter}`,
      cwd: this.cwd,
      env: {
        REDIS_URL: this.storeUrl,
        BUBBLE_LOCK_REDIS_URLS: this.lockUrls.join(','),
        BUBBLE_KEY_PREFIX: this.prefix,
        BUBBLE_POOLS: String(this.pools),
        BUBBLE_TICK: String(this.tickMs),
        BUBBLE_LEASE_MS: String(this.leaseMs),
        BUBBLE_API_KEY: API_KEY,
        BUBBLE_JWT_SECRET: JWT_SECRET,
        LOG_LEVEL: 'info',
        ...extraEnv,
      },
    });
    this.processes.push(proc);
    await proc.listening(START_DEADLINE_MS);
    if (role === 'gateway') this.gatewayUrl ??= proc.url;
    return proc;
  }

  // ------------------------------------------------------------------------------ HTTP

  private get base(): string {
    if (!this.gatewayUrl) throw new Error('no gateway started');
    return this.gatewayUrl;
  }

  async platform(method: string, route: string, body?: unknown): Promise<Reply> {
    const reply = await httpCall(this.base, method, route, { body, apiKey: API_KEY });
    return { status: reply.status, body: jsonBody(reply) };
  }

  /** Like platform(), but fails on any status other than `expected`. */
  async platformOk(
    method: string,
    route: string,
    body: unknown,
    expected: number,
  ): Promise<unknown> {
    const reply = await this.platform(method, route, body);
    if (reply.status !== expected) {
      throw new Error(
        `${method} ${route} ${JSON.stringify(body)} answered ${reply.status} ${JSON.stringify(reply.body)}, expected ${expected}`,
      );
    }
    return reply.body;
  }

  token(user: string): Promise<string> {
    return this.tokens.of(user);
  }

  /** An end-user call with the user's JWT. */
  async client(user: string, method: string, route: string, body?: unknown): Promise<Reply> {
    const reply = await httpCall(this.base, method, route, { body, token: await this.token(user) });
    return { status: reply.status, body: jsonBody(reply) };
  }

  async status(): Promise<ClusterStatus> {
    return (await this.platformOk('GET', '/v1/cluster', undefined, 200)) as ClusterStatus;
  }

  // ------------------------------------------------------------------------- Redis reads

  /** The feed count a core (or a cold start) last stored for the user; null when none is. */
  async storedFeed(user: string): Promise<number | null> {
    const packed = await this.redis.hget(this.keys.badgeOf(user), user);
    if (packed === null) return null;
    return decodeBadgeState(packed).fields.f ?? 0;
  }

  async fences(): Promise<number[]> {
    const values = await this.redis.mget(
      Array.from({ length: this.pools }, (_, pool) => this.keys.fence(pool)),
    );
    return values.map((v) => Number(v ?? 0));
  }

  async staleWrites(): Promise<number[]> {
    const values = await this.redis.mget(
      Array.from({ length: this.pools }, (_, pool) => this.keys.staleWrites(pool)),
    );
    return values.map((v) => Number(v ?? 0));
  }

  /** The stale writes Redis refused so far, over every pool. */
  async staleWritesTotal(): Promise<number> {
    return (await this.staleWrites()).reduce((sum, n) => sum + n, 0);
  }

  /**
   * Per pool, on how many of the three lock servers its Redlock key is set now, leaving out
   * values listed in `stale` (per pool, values of an earlier acquisition).
   */
  async lockVotes(stale: ReadonlyArray<ReadonlySet<string>> = []): Promise<number[]> {
    const values = await this.lockValues();
    return values.map(
      (perServer, pool) => perServer.filter((v) => v !== null && !stale[pool]?.has(v)).length,
    );
  }

  /** Per pool, the value of its Redlock key on each lock server (null where unset). */
  async lockValues(): Promise<(string | null)[][]> {
    this.lockClients ??= this.lockUrls.map((url) => new Redis(url, { maxRetriesPerRequest: 1 }));
    const keys = Array.from({ length: this.pools }, (_, pool) => this.keys.poolLock(pool));
    const perServer = await Promise.all(this.lockClients.map((client) => client.mget(keys)));
    return keys.map((_, pool) => perServer.map((values) => values[pool] ?? null));
  }

  async owners(): Promise<(string | null)[]> {
    const json = await this.redis.get(this.keys.assignment());
    if (json === null) return Array.from({ length: this.pools }, () => null);
    return (JSON.parse(json) as { owners: (string | null)[] }).owners;
  }

  /** The pools the leader's assignment gives `core` now. */
  async poolsOf(core: RoleProcess): Promise<number[]> {
    return (await this.owners()).flatMap((owner, pool) => (owner === core.nodeId ? [pool] : []));
  }

  async generation(): Promise<number> {
    const json = await this.redis.get(this.keys.assignment());
    return json === null ? 0 : (JSON.parse(json) as { generation: number }).generation;
  }

  /** Records every change message of every pool from now on, in the order Redis sent them. */
  async subscribeChanges(): Promise<void> {
    const subscriber = new Redis(this.storeUrl);
    this.subscriber = subscriber;
    // Cold starts and reads (unfenced) publish on :changes, cores' fenced writes on :written.
    const channelPool = new RegExp(
      `^${escapeRegExp(this.prefix)}:\\{p:(\\d+)\\}:(changes|written)$`,
    );
    subscriber.on('pmessage', (_pattern: string, channel: string, message: string) => {
      const matched = channelPool.exec(channel);
      if (!matched) return;
      const pool = Number(matched[1]);
      const header = message.slice(0, message.indexOf('\n'));
      const fence = header === '-' ? null : Number(header);
      // A core's write carries its fencing token; a cold start's (unfenced) write carries none.
      if ((fence === null) !== (matched[2] === 'changes') || Number.isNaN(fence)) {
        this.malformed.push(message);
      }
      const changes = decodeChanges(message);
      this.published.push({
        pool,
        fence,
        users: changes.map((change) => change.user),
        feeds: changes.map((change) => change.fields.f ?? 0),
        receivedAt: Date.now(),
      });
    });
    await subscriber.psubscribe(`${this.prefix}:{p:*}:changes`, `${this.prefix}:{p:*}:written`);
  }

  /** Records every sweep tick the leading server publishes from now on. */
  async subscribeTicks(): Promise<void> {
    const subscriber = new Redis(this.storeUrl);
    this.tickSubscriber = subscriber;
    subscriber.on('message', (_channel: string, message: string) => {
      this.ticks.push({ seq: Number(message), receivedAt: Date.now() });
    });
    await subscriber.subscribe(this.keys.tickChannel());
  }

  // ---------------------------------------------------------------------------- waiting

  /** The live cores' latest sweep reports, by node id. */
  async sweepsByNode(): Promise<Map<string, SweepReport>> {
    const status = await this.status();
    return new Map(status.sweeps.map((s) => [s.node, s]));
  }

  /**
   * Waits until every given core reported a sweep that started reading after `since` plus two
   * sweep periods: everything that happened before `since` has been applied and written.
   */
  async waitSwept(cores: RoleProcess[], since: number, timeoutMs = 10_000): Promise<void> {
    const after = since + 2 * this.tickMs;
    await waitFor(
      async () => {
        const sweeps = await this.sweepsByNode();
        return cores.every((core) => (sweeps.get(core.nodeId)?.at ?? 0) >= after);
      },
      {
        timeoutMs,
        intervalMs: 50,
        message: `cores ${cores.map((c) => c.name).join(', ')} never swept twice after ${since}`,
      },
    );
  }

  /**
   * Waits until the leader's assignment spreads every pool over exactly `cores`, balanced, and
   * each core holds (by its 'pools taken' / 'pool dropped' logs) exactly the pools assigned to it.
   */
  async waitSettled(cores: RoleProcess[], timeoutMs: number): Promise<(string | null)[]> {
    const ids = cores.map((c) => c.nodeId);
    let last: (string | null)[] = [];
    await waitFor(
      async () => {
        last = await this.owners();
        if (!last.every((owner) => owner !== null && ids.includes(owner))) return false;
        const counts = ids.map((id) => last.filter((o) => o === id).length);
        if (Math.max(...counts) - Math.min(...counts) > 1) return false;
        return cores.every((core) => {
          const held = heldPools(core);
          const assigned = last.flatMap((o, pool) => (o === core.nodeId ? [pool] : []));
          return held.size === assigned.length && assigned.every((p) => held.has(p));
        });
      },
      {
        timeoutMs,
        intervalMs: 50,
        message: `the pools never settled over ${cores.map((c) => c.name).join(', ')}`,
      },
    );
    return last;
  }

  /**
   * Waits until `core` owns every pool and holds each pool of `previous` (pool → the fence of
   * its previous holder) under a newer fence: within three leases.
   */
  async waitTookOver(core: RoleProcess, previous: ReadonlyMap<number, number>): Promise<void> {
    const timeoutMs = 3 * this.leaseMs;
    await waitFor(
      async () => {
        const [owners, fences] = await Promise.all([this.owners(), this.fences()]);
        const held = heldPools(core);
        return (
          owners.every((owner) => owner === core.nodeId) &&
          [...previous].every(([pool, fence]) => fences[pool]! > fence && held.has(pool))
        );
      },
      {
        timeoutMs,
        intervalMs: 20,
        message: `${core.name} did not take ${previous.size} pools over within ${timeoutMs} ms`,
      },
    );
  }

  /**
   * Every accepted fenced write so far carried the newest fence of its pool (none went back),
   * and every change message was well formed.
   */
  expectFencesInOrder(): void {
    expect(fenceRegressions(this.published)).toEqual([]);
    expect(this.malformed).toEqual([]);
  }

  describe(): string {
    return this.processes.map((p) => p.describe()).join('\n');
  }

  async close(): Promise<void> {
    await Promise.all(this.processes.map((p) => p.kill().catch(() => undefined)));
    await Promise.all(this.proxies.map((p) => p.close()));
    this.subscriber?.disconnect();
    this.tickSubscriber?.disconnect();
    for (const client of this.lockClients ?? []) client.disconnect();
    this.redis?.disconnect();
    await Promise.all(this.servers.map((s) => s.stop()));
    rmSync(this.cwd, { recursive: true, force: true });
  }
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
