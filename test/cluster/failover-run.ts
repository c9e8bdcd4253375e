/**
 * One failover run of failover-store.test.ts: a server, two cores and a gateway on a store
 * that fails over, SDK sockets open, posts flowing; what it checks after each fault (every
 * pool owned again, no stale write accepted, badges exact within 30 s of the last fault).
 */
import { BubbleClient } from '@bubble/client';
import { RedisKeys } from '@bubble/store';
import {
  freePort,
  RoleProcess,
  uniquePrefix,
  waitFor,
  type RedisClusterHandle,
  type RedisServerHandle,
} from '@bubble/test-utils';
import { decodeBadgeState, decodeChanges, mulberry32 } from '@bubble/protocol';
import { Cluster as RedisCluster, Redis } from 'ioredis';
import { expect } from 'vitest';
import { feedCount } from '../support/feed-definition.js';
import { httpCall, jsonBody } from '../support/http.js';
import { TokenCache } from '../support/tokens.js';
import { recordingWebSocket, type SocketRecord } from '../ws/processes.js';
import { fenceRegressions, heldPools, overlappingTenures, type Published } from './pool-tenures.js';

export const API_KEY = 'failover-api-key-8e3b5c1f07a946d2';
export const JWT_SECRET = 'failover-jwt-secret-2a7d9e4c61f05b38';
export const POOLS = 12;
export const LEASE_MS = 1500;
export const TICK_MS = 200;
export const START_DEADLINE_MS = 30_000;
/** The issue's bound: badges exact this long after the last fault. */
export const EXACT_WITHIN_MS = 30_000;
/**
 * A promotion (cluster-node-timeout 2 s, then an election), then a lease for the old locks to
 * lapse, the leader's next round and a take: every pool owned again by then.
 */
export const OWNED_AGAIN_MS = 4_000 + 3 * LEASE_MS + 5_000;

export interface Post {
  author: string;
  id: string;
  ts: number;
}

/** Where the roles find the store, and a client of it for the test's own reads. */
export interface Store {
  env: Record<string, string>;
  admin: Redis | RedisCluster;
  /** Cluster: SSUBSCRIBE per pool shard; one server: SUBSCRIBE. */
  subscribe(
    channels: string[],
    onMessage: (channel: string, message: string) => void,
  ): Promise<() => void>;
}

export interface Socket {
  user: string;
  client: BubbleClient;
  sockets: SocketRecord[];
}

export class FailoverRun {
  readonly prefix = uniquePrefix('failover');
  readonly keys = new RedisKeys(this.prefix, POOLS);
  readonly processes: RoleProcess[] = [];
  readonly published: Published[] = [];
  readonly follows = new Map<string, Set<string>>();
  readonly posts = new Map<string, { author: string; ts: number }>();
  readonly sockets: Socket[] = [];
  /** Posts answered 5xx (or not at all) before a retry was accepted. */
  retried = 0;
  private readonly tokens = new TokenCache(JWT_SECRET);
  private unsubscribe: (() => void) | undefined;
  gateway!: RoleProcess;

  constructor(readonly store: Store) {}

  get admin(): Redis | RedisCluster {
    return this.store.admin;
  }

  async spawn(role: 'server' | 'core' | 'gateway'): Promise<RoleProcess> {
    const proc = new RoleProcess({
      role,
      port: await freePort(),
      name: `${role}#${this.processes.length + 1}`,
      env: {
        ...this.store.env,
        BUBBLE_KEY_PREFIX: this.prefix,
        BUBBLE_POOLS: String(POOLS),
        BUBBLE_TICK: String(TICK_MS),
        BUBBLE_LEASE_MS: String(LEASE_MS),
        BUBBLE_API_KEY: API_KEY,
        BUBBLE_JWT_SECRET: JWT_SECRET,
        LOG_LEVEL: 'info',
      },
    });
    this.processes.push(proc);
    await proc.listening(START_DEADLINE_MS);
    return proc;
  }

  async platform(method: string, route: string, body?: unknown) {
    const reply = await httpCall(this.gateway.url, method, route, { body, apiKey: API_KEY });
    return { status: reply.status, body: jsonBody(reply) };
  }

  /** Sends until accepted, as a platform retries a 5xx; the model takes it once accepted. */
  async post(post: Post): Promise<void> {
    const deadline = Date.now() + 20_000;
    for (let attempt = 0; ; attempt++) {
      const status = await this.platform('POST', '/v1/posts', post).then(
        (reply) => reply.status,
        () => 0,
      );
      if (status === 202) {
        if (attempt > 0) this.retried++;
        if (!this.posts.has(`${post.author}/${post.id}`)) {
          this.posts.set(`${post.author}/${post.id}`, { author: post.author, ts: post.ts });
        }
        return;
      }
      if (status !== 0 && status < 500) throw new Error(`POST /v1/posts answered ${status}`);
      if (Date.now() > deadline) throw new Error(`a post was refused for 20 s (last ${status})`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  feed(user: string, T = Date.now()): number {
    return feedCount(this.posts, new Set(), this.follows.get(user) ?? new Set(), undefined, T);
  }

  /** Every change message of every pool, as Redis sent them. */
  async subscribeChanges(): Promise<void> {
    const channelPool = /\{p:(\d+)\}:(changes|written)$/;
    const onMessage = (channel: string, message: string) => {
      const matched = channelPool.exec(channel);
      if (!matched) return;
      const header = message.slice(0, message.indexOf('\n'));
      const changes = decodeChanges(message);
      this.published.push({
        pool: Number(matched[1]),
        fence: header === '-' ? null : Number(header),
        users: changes.map((change) => change.user),
        feeds: changes.map((change) => change.fields.f ?? 0),
        receivedAt: Date.now(),
      });
    };
    const channels = Array.from({ length: POOLS }, (_, pool) => [
      this.keys.badgeChannel(pool),
      this.keys.writtenChannel(pool),
    ]).flat();
    this.unsubscribe = await this.store.subscribe(channels, onMessage);
  }

  async openSocket(user: string): Promise<void> {
    const sockets: SocketRecord[] = [];
    const client = new BubbleClient({
      url: [this.gateway.url],
      token: await this.tokens.of(user),
      WebSocket: recordingWebSocket(sockets),
      backoffBaseMs: 200,
      backoffMaxMs: 2000,
    });
    this.sockets.push({ user, client, sockets });
    client.start();
    await waitFor(() => client.state === 'open', {
      timeoutMs: 20_000,
      message: `${user}'s socket never opened`,
    });
  }

  async owners(): Promise<(string | null)[]> {
    const json = await this.admin.get(this.keys.assignment());
    if (json === null) return Array.from({ length: POOLS }, () => null);
    return (JSON.parse(json) as { owners: (string | null)[] }).owners;
  }

  /** Every pool assigned to a live core, and each core holds (by its log) what it is assigned. */
  async allPoolsOwned(cores: RoleProcess[]): Promise<boolean> {
    const owners = await this.owners();
    const live = cores.filter((core) => core.alive).map((core) => core.nodeId);
    if (!owners.every((owner) => owner !== null && live.includes(owner))) return false;
    return cores.every((core) => {
      const held = heldPools(core);
      return owners.every((owner, pool) => (owner === core.nodeId) === held.has(pool));
    });
  }

  async storedFeed(user: string): Promise<number | null> {
    const packed = await this.admin.hget(this.keys.badgeOf(user), user);
    return packed === null ? null : (decodeBadgeState(packed).fields.f ?? 0);
  }

  async staleWritesRefused(): Promise<number> {
    const values = await Promise.all(
      Array.from({ length: POOLS }, (_, pool) => this.admin.get(this.keys.staleWrites(pool))),
    );
    return values.reduce((sum, v) => sum + Number(v ?? 0), 0);
  }

  /** The shard whose master holds the most pools' keys (fences, locks, logs), by slot. */
  async busiestShard(redis: RedisClusterHandle) {
    const topology = await redis.topology();
    const slots = await Promise.all(
      Array.from({ length: POOLS }, async (_, pool) =>
        Number(await this.admin.call('CLUSTER', 'KEYSLOT', this.keys.fence(pool))),
      ),
    );
    const candidates = topology.masters.filter((m) => m.replicas.length > 0);
    const poolsOn = (m: (typeof candidates)[number]) =>
      slots.filter((slot) => m.slots.some(([lo, hi]) => slot >= lo && slot <= (hi ?? lo))).length;
    candidates.sort((a, b) => poolsOn(b) - poolsOn(a));
    const shard = candidates[0]!;
    return { master: shard.server, replica: shard.replicas[0]!, pools: poolsOn(shard) };
  }

  /** Waits until `server` serves slots as a master. */
  async waitPromoted(
    redis: RedisClusterHandle,
    server: RedisServerHandle,
    timeoutMs: number,
  ): Promise<void> {
    await waitFor(async () => (await redis.topology()).masters.some((m) => m.server === server), {
      timeoutMs,
      intervalMs: 100,
      message: `replica ${server.port} was never promoted`,
    });
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.client.close();
    await Promise.all(this.processes.map((p) => p.kill().catch(() => undefined)));
    this.unsubscribe?.();
    this.admin.disconnect();
  }

  describe(): string {
    return this.processes.map((p) => p.describe()).join('\n');
  }
}

/** A fault, injected; resolves once the store has a master again where it had one. */
export interface Fault {
  name: string;
  /** A handover without data loss: every lease must survive it. */
  losesNothing?: boolean;
  inject(): Promise<string>;
}

/**
 * Starts the roles on `store`, sets up the users and sockets, keeps posts flowing through each
 * fault in turn (each followed by all pools owned again), then checks the badges and fences.
 */
export async function survivesFaults(
  r: FailoverRun,
  seed: number,
  faults: (r: FailoverRun) => Fault[],
): Promise<string> {
  const rand = mulberry32(seed);
  const [, coreA, coreB, gateway] = await Promise.all([
    r.spawn('server'),
    r.spawn('core'),
    r.spawn('core'),
    r.spawn('gateway'),
  ]);
  r.gateway = gateway!;
  const cores = [coreA!, coreB!];
  await waitFor(() => r.allPoolsOwned(cores), {
    timeoutMs: 3 * LEASE_MS + 10_000,
    intervalMs: 50,
    message: 'the pools never settled over the two cores',
  });
  await r.subscribeChanges();

  const users = Array.from({ length: 30 }, (_, i) => `u${String(i).padStart(2, '0')}`);
  const authors = Array.from({ length: 8 }, (_, i) => `a${i}`);
  const online: string[] = [];
  for (const user of users) {
    const followed = authors.filter(() => rand() < 0.35);
    if (followed.length === 0) followed.push(authors[Math.floor(rand() * authors.length)]!);
    const reply = await r.platform('PUT', `/v1/users/${user}/follows`, { authors: followed });
    expect(reply.status).toBe(204);
    r.follows.set(user, new Set(followed));
    if (rand() < 0.6) {
      const body = { user, online: true, ttlMs: 3_600_000 };
      expect((await r.platform('POST', '/v1/presence', body)).status).toBe(204);
      online.push(user);
    }
  }
  for (const user of online.slice(0, 6)) await r.openSocket(user);

  // Posts keep flowing through the faults, in two lanes.
  let postSeq = 0;
  let flowing = true;
  const lanes = [0, 1].map(async () => {
    while (flowing) {
      const author = authors[Math.floor(rand() * authors.length)]!;
      const ts = Date.now() - 1_000 - Math.floor(rand() * 600_000);
      await r.post({ author, id: `p${++postSeq}`, ts });
      await new Promise((resolve) => setTimeout(resolve, 40));
    }
  });
  await waitFor(() => r.posts.size >= 20, { timeoutMs: 20_000, message: 'posts never flowed' });

  const notes: string[] = [];
  const faultsFrom = Date.now();
  for (const fault of faults(r)) {
    const at = Date.now();
    const what = await fault.inject();
    await waitFor(() => r.allPoolsOwned(cores), {
      timeoutMs: OWNED_AGAIN_MS,
      intervalMs: 50,
      message: `not every pool owned again within ${OWNED_AGAIN_MS} ms of ${fault.name}`,
    });
    const ownedAfter = Date.now() - at;
    const postsAfter = r.posts.size;
    await waitFor(() => r.posts.size >= postsAfter + 20, {
      timeoutMs: 20_000,
      message: `posts stopped flowing after ${fault.name}`,
    });
    const droppedNow = cores.flatMap((core) => core.logs('pool dropped', at)).length;
    if (fault.losesNothing) expect(droppedNow, `pools dropped after ${fault.name}`).toBe(0);
    notes.push(
      `${fault.name} (${what}): all pools owned again at +${ownedAfter} ms, ${droppedNow} drops`,
    );
  }
  flowing = false;
  await Promise.all(lanes);
  const lastWriteAt = Date.now();

  // Exact within 30 s of the last fault's end: stored, pushed and served badges.
  let wrongStored: string[] = [];
  await waitFor(
    async () => {
      const T = Date.now();
      const wrong: string[] = [];
      for (const user of online) {
        const feed = (await r.storedFeed(user)) ?? 0;
        if (feed !== r.feed(user, T))
          wrong.push(`${user}: stored ${feed}, defined ${r.feed(user, T)}`);
      }
      wrongStored = wrong;
      return wrong.length === 0;
    },
    { timeoutMs: EXACT_WITHIN_MS, intervalMs: 100 },
  ).catch((err: unknown) => {
    throw new Error(
      `stored badges still wrong ${EXACT_WITHIN_MS} ms after the faults:\n  ` +
        `${wrongStored.join('\n  ')}\n  (${(err as Error).message})`,
    );
  });
  const storedExactAfter = Date.now() - lastWriteAt;
  const wrongPushed = () => r.sockets.filter((s) => s.client.badge?.feed !== r.feed(s.user));
  await waitFor(() => wrongPushed().length === 0, {
    timeoutMs: Math.max(1_000, EXACT_WITHIN_MS - (Date.now() - lastWriteAt)),
    message: `pushed badges wrong: ${wrongPushed()
      .map((s) => `${s.user} has ${s.client.badge?.feed}, defined ${r.feed(s.user)}`)
      .join('; ')}`,
  });
  const wrongServed: string[] = [];
  for (const user of users) {
    const reply = await r.platform('GET', `/v1/users/${user}/badge`);
    const feed = (reply.body as { feed?: number } | undefined)?.feed;
    if (reply.status !== 200 || feed !== r.feed(user)) {
      wrongServed.push(`${user}: served ${reply.status} ${feed}, defined ${r.feed(user)}`);
    }
  }
  expect(wrongServed).toEqual([]);

  // No stale token accepted: per pool the accepted fenced writes never went back. Refused stale
  // writes are counted, not errors.
  expect(fenceRegressions(r.published)).toEqual([]);
  expect(cores.every((core) => core.alive) && gateway!.alive).toBe(true);
  const refused = await r.staleWritesRefused();
  const fenced = r.published.filter((m) => m.fence !== null).length;
  // A core logs 'pool dropped' as it lets the pool go, before its lock is released, so by the
  // logs no two tenures should overlap; the fences above are what keeps the writes apart.
  const overlaps = overlappingTenures(cores).length;
  const drops = new Map<string, number>();
  for (const line of cores.flatMap((core) => core.logs('pool dropped', faultsFrom))) {
    drops.set(String(line.reason), (drops.get(String(line.reason)) ?? 0) + 1);
  }
  const dropped = [...drops].map(([reason, n]) => `${n} ${reason}`).join(', ') || 'none';
  return (
    `seed ${seed}; ${notes.join('; ')}; ${r.posts.size} posts (${r.retried} retried after a ` +
    `5xx); ${fenced} fenced writes accepted, 0 with an old token, ${refused} refused as ` +
    `stale; pools dropped during the faults: ${dropped}; ${overlaps} tenures overlapping ` +
    `by the logs; stored badges exact ` +
    `${storedExactAfter} ms after the last post`
  );
}
