/**
 * Users' sources from the platform's endpoint in a real cluster (`bubble server`, `core` and
 * `gateway` as child processes, BUBBLE_SOURCES_URL and _SECRET in their environment, the
 * endpoint in this process answering from the test's platform):
 *
 * - users online (half on WebSockets, half through the presence API) whose follows were never
 *   fed: the gateway fetches them as it computes their first badge, and every online user's
 *   stored and pushed badge is the definition's over the endpoint's graph;
 * - then the main Redis is killed (-9) and restarted empty under the running cluster; the
 *   platform feeds posts and its presence again (the gateway writes its sockets' presence back
 *   itself), never follows: the core fetches the users it loads again in batches, and every
 *   online user's badge is exact again;
 * - the endpoint failing while the core loads: the core keeps retrying past one fetch's
 *   attempts, and the badges are exact once it answers.
 */
import { HOUR_MS, mulberry32 } from '@bubble/protocol';
import {
  startSourcesEndpoint,
  waitFor,
  type RoleProcess,
  type SourcesEndpoint,
} from '@bubble/test-utils';
import { afterEach, describe, expect } from 'vitest';
import { WebSocket } from 'ws';
import { LOOKBACK_MS } from '../support/feed-definition.js';
import {
  Platform,
  SOURCES_SECRET,
  idList,
  randomGraph,
  randomPosts,
} from '../support/sources-graph.js';
import { httpCall } from '../support/http.js';
import { useClusterTests } from './cluster-test.js';
import type { Cluster } from './harness.js';

const ONLINE_TTL_MS = 3_600_000;

/** A user's socket, reopened whenever it closes (as the SDK does); keeps the newest feed. */
class Watcher {
  feed: number | undefined;
  private socket: WebSocket | undefined;
  private stopped = false;

  constructor(
    readonly user: string,
    private readonly gateway: RoleProcess,
    private readonly token: string,
  ) {
    this.open();
  }

  close(): void {
    this.stopped = true;
    this.socket?.terminate();
  }

  private open(): void {
    const socket = (this.socket = new WebSocket(this.gateway.wsUrl, {
      headers: { authorization: `Bearer ${this.token}` },
      perMessageDeflate: false,
    }));
    socket.on('message', (data: Buffer) => {
      const frame = JSON.parse(data.toString('utf8')) as { type: string; badge?: { feed: number } };
      if (frame.type === 'badge' && frame.badge) this.feed = frame.badge.feed;
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      if (!this.stopped) setTimeout(() => this.open(), 100).unref();
    });
  }
}

/** The platform's graph over `users`, posts within the lookback (an hour clear of its edge). */
function platformOf(seed: number, users: readonly string[]): Platform {
  const platform = new Platform();
  const rand = mulberry32(seed);
  const T = Date.now();
  const authors = idList('a', 30);
  const topics = idList('t', 5);
  for (const [user, entry] of randomGraph(rand, { users, authors, topics }, T))
    platform.graph.set(user, entry);
  platform.addPosts(
    randomPosts(rand, authors, topics, T - 1_000, 300, { maxAgeMs: LOOKBACK_MS - HOUR_MS }),
  );
  return platform;
}

/** A platform call retried until it is answered `status` (the gateway may be reconnecting). */
async function platformUntil(
  c: Cluster,
  method: string,
  route: string,
  body: unknown,
  status: number,
): Promise<void> {
  await waitFor(async () => (await c.platform(method, route, body)).status === status, {
    timeoutMs: 20_000,
    intervalMs: 100,
    message: `${method} ${route} was never answered ${status}`,
  });
}

/** Posts and presence, as the platform feeds them (and feeds them again after a Redis loss). */
async function feedPostsAndPresence(
  c: Cluster,
  platform: Platform,
  online: readonly string[],
): Promise<void> {
  for (const posts of platform.postBatches())
    await platformUntil(c, 'POST', '/v1/posts', { posts }, 202);
  for (let i = 0; i < online.length; i += 25) {
    await Promise.all(
      online
        .slice(i, i + 25)
        .map((user) =>
          platformUntil(
            c,
            'POST',
            '/v1/presence',
            { user, online: true, ttlMs: ONLINE_TTL_MS },
            204,
          ),
        ),
    );
  }
}

/** Online users whose stored (core-written) or pushed badge is not the definition's now. */
async function wrongBadges(
  c: Cluster,
  platform: Platform,
  online: readonly string[],
  watchers: readonly Watcher[],
): Promise<string[]> {
  const T = Date.now();
  const stored = await Promise.all(online.map((user) => c.storedFeed(user)));
  const wrong = online.flatMap((user, i) =>
    stored[i] === platform.feed(user, T)
      ? []
      : [`${user}: stored ${stored[i]}, definition ${platform.feed(user, T)}`],
  );
  for (const watcher of watchers) {
    const expected = platform.feed(watcher.user, T);
    if (watcher.feed !== expected)
      wrong.push(`${watcher.user}: pushed ${watcher.feed}, definition ${expected}`);
  }
  return wrong;
}

async function expectExact(
  c: Cluster,
  platform: Platform,
  online: readonly string[],
  watchers: readonly Watcher[],
  timeoutMs: number,
): Promise<void> {
  let wrong: string[] = [];
  await waitFor(
    async () => {
      wrong = await wrongBadges(c, platform, online, watchers);
      return wrong.length === 0;
    },
    { timeoutMs, intervalMs: 100 },
  ).catch(() => {
    throw new Error(`badges not exact after ${timeoutMs} ms:\n  ${wrong.join('\n  ')}`);
  });
}

/** A process's metric series (0 when absent), from its /metrics. */
async function metric(role: RoleProcess, series: string): Promise<number> {
  const text = await (await fetch(`${role.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

describe("cluster: users' sources from the platform's endpoint", () => {
  const clusterTest = useClusterTests();
  let endpoint: SourcesEndpoint | undefined;
  afterEach(async () => {
    await endpoint?.close();
    endpoint = undefined;
  });

  async function startEndpoint(platform: Platform): Promise<Record<string, string>> {
    endpoint = await startSourcesEndpoint({ secret: SOURCES_SECRET, graph: platform.graph });
    return { BUBBLE_SOURCES_URL: endpoint.url, BUBBLE_SOURCES_SECRET: SOURCES_SECRET };
  }

  clusterTest(
    'users online whose follows were never fed, then the store emptied (kill -9) with follows never fed again: every badge exact',
    { label: 'refill', tag: 'sources refill', timeoutMs: 120_000 },
    async ({ c, seed }) => {
      const users = idList('u', 120);
      // Half on WebSockets (their gateway holds them), half online through the presence API.
      const onSockets = users.slice(0, 60);
      const throughPresence = users.slice(60);
      const platform = platformOf(seed, users);
      const env = await startEndpoint(platform);
      const [, core, gateway] = await Promise.all([
        c.spawn('server', env),
        c.spawn('core', env),
        c.spawn('gateway', env),
      ]);
      await c.waitSettled([core], c.settleMs);
      await feedPostsAndPresence(c, platform, throughPresence);
      const watchers = await Promise.all(
        onSockets.map(async (user) => new Watcher(user, gateway, await c.token(user))),
      );
      try {
        const loadedFrom = Date.now();
        await expectExact(c, platform, users, watchers, 20_000);
        const loadedIn = Date.now() - loadedFrom;
        const requests = endpoint!.requests;
        expect(requests.every((r) => r.signatureValid && r.mode === 'ok')).toBe(true);
        expect(new Set(requests.flatMap((r) => r.users))).toEqual(new Set(users));
        const before = requests.length;

        endpoint!.resetRequests();
        const coreRequests = await metric(core, 'bubble_sources_requests_total{result="ok"}');
        const coreUsers = await metric(core, 'bubble_sources_users_fetched_total{result="ok"}');
        const killedAt = Date.now();
        await c.restartStore();
        // The platform feeds posts and its presence again; the gateway writes its sockets'.
        await feedPostsAndPresence(c, platform, throughPresence);
        await expectExact(c, platform, users, watchers, 30_000);
        const healedIn = Date.now() - killedAt;
        // Follows were never fed again: every online user's came from the endpoint anew.
        expect(new Set(endpoint!.requests.flatMap((r) => r.users))).toEqual(new Set(users));
        // The core loaded the users its gateway holds through the endpoint, in batches.
        const refillRequests =
          (await metric(core, 'bubble_sources_requests_total{result="ok"}')) - coreRequests;
        const refilledUsers =
          (await metric(core, 'bubble_sources_users_fetched_total{result="ok"}')) - coreUsers;
        expect(refilledUsers).toBeGreaterThanOrEqual(onSockets.length / 2);
        expect(refillRequests).toBeLessThanOrEqual(Math.ceil(refilledUsers / 10));
        expect(c.processes.filter((p) => !p.alive).map((p) => p.name)).toEqual([]);
        return (
          `${users.length} online users exact ${loadedIn} ms after they came online, from ` +
          `${before} requests; after kill -9 and an empty restart, exact ${healedIn} ms after ` +
          `the kill from ${endpoint!.requests.length} requests, the core's ${refillRequests} ` +
          `for ${refilledUsers} users`
        );
      } finally {
        for (const watcher of watchers) watcher.close();
      }
    },
  );

  clusterTest(
    'the endpoint failing while the core loads its users: polls stale, the core keeps retrying, exact and not stale once it answers',
    { label: 'refill-down', tag: 'sources down at load', timeoutMs: 90_000 },
    async ({ c, seed }) => {
      const users = idList('d', 40);
      const platform = platformOf(seed, users);
      // One poller whose exact feed is 0, one whose is not: neither may stay marked stale.
      platform.graph.set('d0', { follows: [], topics: [] });
      platform.graph.set('d1', { follows: ['a0'], topics: [] });
      platform.addPosts([{ author: 'a0', id: 'fresh', ts: Date.now() - 1_000 }]);
      const env = await startEndpoint(platform);
      await Promise.all([c.spawn('server', env), c.spawn('gateway', env)]);
      endpoint!.setMode({ kind: 'fail' });
      // Online (and polling) while the endpoint fails: served without the feed, marked stale.
      await feedPostsAndPresence(c, platform, users);
      for (const user of ['d0', 'd1']) {
        const poll = await c.client(user, 'GET', '/v1/badge');
        expect({ user, status: poll.status, feed: (poll.body as { feed: number }).feed }).toEqual({
          user,
          status: 200,
          feed: 0,
        });
      }
      const stale = await httpCall(gatewayUrl(c), 'GET', '/v1/badge', {
        token: await c.token('d1'),
      });
      expect(stale.headers.get('x-bubble-stale')).toBe('1');

      // The core starts: it loads them all with the pools it takes, in one fetch whose four
      // attempts (the client's) all fail; the fifth request is the core's own retry.
      endpoint!.resetRequests();
      endpoint!.setMode({ kind: 'fail' }, 4);
      const core = await c.spawn('core', env);
      await c.waitSettled([core], c.settleMs);
      await expectExact(c, platform, users, [], 20_000);
      const requests = endpoint!.requests;
      expect(requests.slice(0, 4).map((r) => r.mode)).toEqual(['fail', 'fail', 'fail', 'fail']);
      for (const user of users) {
        const failed = requests.filter((r) => r.mode === 'fail' && r.users.includes(user));
        const answered = requests.filter((r) => r.mode === 'ok' && r.users.includes(user));
        expect({ user, failed: failed.length, answered: answered.length }).toEqual({
          user,
          failed: 4,
          answered: 1,
        });
      }

      // The pollers get the exact badge, no longer marked stale.
      for (const user of ['d0', 'd1']) {
        const expected = platform.feed(user, Date.now());
        await waitFor(
          async () => {
            const poll = await httpCall(gatewayUrl(c), 'GET', '/v1/badge', {
              token: await c.token(user),
            });
            const feed = (JSON.parse(poll.text) as { feed: number }).feed;
            return feed === expected && poll.headers.get('x-bubble-stale') === null;
          },
          { timeoutMs: 10_000, intervalMs: 100, message: `${user}'s poll stayed stale or wrong` },
        );
      }
      return `${users.length} users exact after ${requests.length} requests, the first 4 failed`;
    },
  );
});

function gatewayUrl(c: Cluster): string {
  return c.processes.find((p) => p.name.startsWith('gateway'))!.url;
}
