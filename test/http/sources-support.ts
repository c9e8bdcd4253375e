/**
 * In-process apps wired as a role with BUBBLE_SOURCES_URL is (packages/cli/src/roles/roles.ts):
 * a store holding sources on demand, a SourcesClient on a real sources endpoint answering from
 * the test's own platform (test/support/sources-graph.ts), and a BadgeService and HttpGateway
 * over them on a real HTTP port. On the memory engine, one redis-server, or a 3-master Redis
 * Cluster; every app, client, store and endpoint a test starts is closed after it.
 */
import { BadgeService, type BadgeRules } from '@bubble/badges';
import { SourcesClient, type SourcesClientOptions } from '@bubble/events';
import { HttpGateway } from '@bubble/gateway';
import { ManualClock, type Badge } from '@bubble/protocol';
import { MemoryStore, RedisStore, type BubbleStore } from '@bubble/store';
import {
  startRedisCluster,
  startRedisServer,
  startSourcesEndpoint,
  uniquePrefix,
  type RedisClusterHandle,
  type RedisServerHandle,
  type SourcesEndpoint,
  type SourcesEndpointMode,
} from '@bubble/test-utils';
import { Cluster, type Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { httpCall, type Reply } from '../support/http.js';
import { Platform, SOURCES_SECRET, type PlatformPost } from '../support/sources-graph.js';
import { API_KEY, JWT_SECRET, tokenFor } from './support.js';

export type SourcesEngine = 'memory' | 'redis' | 'redis cluster';

export const SOURCES_ENGINES = ['memory', 'redis'] as const satisfies readonly SourcesEngine[];

export const CAPS = { follows: 50, topics: 20 };

export interface SourcesApp {
  url: string;
  service: BadgeService;
  store: BubbleStore;
  clock: ManualClock;
  client: SourcesClient;
  endpoint: SourcesEndpoint;
  /** The graph the endpoint answers from and the posts the test feeds. */
  platform: Platform;
}

export interface SourcesAppOptions {
  /** BUBBLE_SOURCES_TIMEOUT_MS: the client's request timeout and a cold start's wait; 2000. */
  timeoutMs?: number;
  client?: Partial<SourcesClientOptions>;
  rules?: Partial<BadgeRules>;
  mode?: SourcesEndpointMode;
  /** An app over an existing store and platform (another gateway of the same cluster). */
  store?: BubbleStore;
  platform?: Platform;
}

export interface SourcesRig {
  /** A fresh, empty store of the engine, holding sources on demand. */
  newStore(): BubbleStore;
  start(options?: SourcesAppOptions): Promise<SourcesApp>;
}

/** Registers the servers, and the closing of what each test starts, in the calling block. */
export function useSourcesRig(engine: SourcesEngine, label: string): SourcesRig {
  let server: RedisServerHandle | undefined;
  let cluster: RedisClusterHandle | undefined;
  const opened: Array<() => Promise<void>> = [];
  if (engine !== 'memory') {
    beforeAll(async () => {
      if (engine === 'redis') server = await startRedisServer();
      else cluster = await startRedisCluster({ masters: 3 });
    }, 60_000);
    afterAll(async () => {
      await server?.stop();
      await cluster?.stop();
    });
  }
  afterEach(async () => {
    // Gateways first, then clients (which end their fetches), then stores and endpoints.
    for (const close of opened.splice(0).reverse()) await close();
  });
  const newStore = (): BubbleStore => {
    const common = { keyPrefix: uniquePrefix(label), pools: 100, sourcesOnDemand: true };
    const store =
      engine === 'memory'
        ? new MemoryStore({ sourcesOnDemand: true })
        : engine === 'redis'
          ? new RedisStore({ url: server!.url, ...common })
          : new RedisStore({
              clusterNodes: cluster!.nodes.map((n) => `${n.host}:${n.port}`),
              ...common,
            });
    opened.push(() => store.close());
    return store;
  };
  return {
    newStore,
    async start(options = {}) {
      const platform = options.platform ?? new Platform();
      const endpoint = await startSourcesEndpoint({
        secret: SOURCES_SECRET,
        graph: platform.graph,
        ...(options.mode && { mode: options.mode }),
      });
      opened.push(() => endpoint.close());
      const store = options.store ?? newStore();
      const timeoutMs = options.timeoutMs ?? 2_000;
      const rules = { followCap: CAPS.follows, topicCap: CAPS.topics, ...options.rules };
      const client = new SourcesClient({
        url: endpoint.url,
        secret: SOURCES_SECRET,
        caps: { follows: rules.followCap, topics: rules.topicCap },
        timeoutMs,
        ...options.client,
      });
      opened.push(() => client.close());
      // A clock that stands still: every count of a test is at one T.
      const clock = new ManualClock(Date.now());
      const service = new BadgeService(store, clock, rules, {
        sources: client,
        sourcesTimeoutMs: timeoutMs,
      });
      const gateway = new HttpGateway({
        service,
        auth: { apiKey: API_KEY, jwtSecret: JWT_SECRET },
        logger: pino({ level: 'silent' }),
      });
      const address = await gateway.listen(0, '127.0.0.1');
      opened.push(() => gateway.close());
      const url = `http://127.0.0.1:${address.port}`;
      return { url, service, store, clock, client, endpoint, platform };
    },
  };
}

export function platformCall(
  app: SourcesApp,
  method: string,
  path: string,
  body?: unknown,
): Promise<Reply> {
  return httpCall(app.url, method, path, { apiKey: API_KEY, body });
}

/** A platform call that must answer `status`. */
export async function platformOk(
  app: SourcesApp,
  method: string,
  path: string,
  body?: unknown,
  status = 204,
): Promise<Reply> {
  const reply = await platformCall(app, method, path, body);
  expect(reply.status, `${method} ${path}: ${reply.text}`).toBe(status);
  return reply;
}

export interface ServedBadge {
  badge: Badge;
  stale: boolean;
}

function served(reply: Reply, what: string): ServedBadge {
  expect(reply.status, `${what}: ${reply.text}`).toBe(200);
  return {
    badge: JSON.parse(reply.text) as Badge,
    stale: reply.headers.get('x-bubble-stale') === '1',
  };
}

/** GET /v1/users/{user}/badge: a cold start that never counts as seeing the user. */
export async function platformBadge(app: SourcesApp, user: string): Promise<ServedBadge> {
  return served(await platformCall(app, 'GET', `/v1/users/${user}/badge`), `badge of ${user}`);
}

/** GET /v1/badge with the user's token: the end user's own poll. */
export async function clientBadge(app: SourcesApp, user: string): Promise<ServedBadge> {
  const reply = await httpCall(app.url, 'GET', '/v1/badge', { token: await tokenFor(user) });
  return served(reply, `poll of ${user}`);
}

/** An end-user call with the user's token. */
export async function clientCall(
  app: SourcesApp,
  user: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<Reply> {
  return httpCall(app.url, method, path, { token: await tokenFor(user), body });
}

/** The platform's posts fed to bubble (POST /v1/posts). */
export async function feedPosts(app: SourcesApp, posts?: readonly PlatformPost[]): Promise<void> {
  const batches = posts ? [posts] : app.platform.postBatches();
  for (const batch of batches) {
    if (batch.length > 0) await platformOk(app, 'POST', '/v1/posts', { posts: batch }, 202);
  }
}

/** GET /v1/users/{user}/follows and /topics, as the badge counts them. */
export async function listedSources(
  app: SourcesApp,
  user: string,
): Promise<{ follows: string[]; topics: string[] }> {
  const [follows, topics] = await Promise.all([
    platformOk(app, 'GET', `/v1/users/${user}/follows`, undefined, 200),
    platformOk(app, 'GET', `/v1/users/${user}/topics`, undefined, 200),
  ]);
  return {
    follows: (JSON.parse(follows.text) as { authors: string[] }).authors,
    topics: (JSON.parse(topics.text) as { topics: string[] }).topics,
  };
}

/** The users of every request the endpoint received, in order. */
export function askedUsers(endpoint: SourcesEndpoint): string[][] {
  return endpoint.requests.map((request) => request.users);
}

/**
 * What the store holds under the user's hash tag `{u:<user>}` (Redis: every key, found by
 * SCAN on each master), or the parts the memory engine's heldFor() names.
 */
export async function heldUnderUser(store: BubbleStore, user: string): Promise<string[]> {
  if (store instanceof MemoryStore) return store.heldFor(user).sort();
  const redis = store as RedisStore;
  const client = redis.redis;
  const nodes: Redis[] = client instanceof Cluster ? client.nodes('master') : [client];
  const pattern = `${redis.keys.prefix}:*{u:${user}}*`;
  const keys = new Set<string>();
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, batch] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      for (const key of batch) keys.add(key);
    } while (cursor !== '0');
  }
  return [...keys].sort();
}

/** Sorted copy. */
export const sortedIds = (ids: Iterable<string>): string[] => [...ids].sort();
