/**
 * Per-user and per-address limits of the client routes (issue 19; docs/api.md "Limits of the
 * client routes"): an in-process gateway on a real redis-server, loopback trusted as a proxy so
 * X-Forwarded-For gives each simulated client its own address. A user polling far above its
 * X-Poll-Interval is refused 429 with Retry-After while other users and addresses are not; a
 * refused request runs no Redis command and is refused before its body is parsed; the tables
 * stay bounded under a flood of distinct addresses; the counter of refusals is on /metrics.
 */
import { DEFAULT_CLIENT_LIMITS } from '../../packages/gateway/src/http/client-limits.js';
import { waitFor } from '@bubble/test-utils';
import type { RedisStore } from '@bubble/store';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { parseCidrList } from '@bubble/gateway';
import {
  call,
  client,
  expectError,
  platform,
  tokenFor,
  useApps,
  type App,
  type AppOptions,
  type Reply,
} from './support.js';

const LOOPBACK_PROXY = parseCidrList('127.0.0.1/32,10.0.0.0/8');
/** One token per 100 s: nothing refills while a test runs, however slow the machine. */
const SLOW = { perSecond: 0.01, burst: 3 };
const UNLIMITED = { perSecond: 1_000_000, burst: 1_000_000 };

function from(address: string): Record<string, string> {
  return { 'x-forwarded-for': address };
}

function expectRateLimited(reply: Reply, maxSeconds: number): number {
  expectError(reply, 429, 'UB_ERR_RATE_LIMITED');
  const retryAfter = Number(reply.headers.get('retry-after'));
  expect(Number.isInteger(retryAfter)).toBe(true);
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(maxSeconds);
  return retryAfter;
}

/** INFO commandstats as command → calls (subcommands such as `config|resetstat` summed). */
async function commandStats(admin: Redis): Promise<Map<string, number>> {
  const info = await admin.info('commandstats');
  const stats = new Map<string, number>();
  for (const [, name, calls] of info.matchAll(/^cmdstat_([^:|]+)[^:]*:calls=(\d+)/gm))
    stats.set(name!, (stats.get(name!) ?? 0) + Number(calls));
  return stats;
}

async function metricsText(app: App): Promise<string> {
  const reply = await call(app, 'GET', '/metrics');
  expect(reply.status).toBe(200);
  return reply.text;
}

function refusals(metrics: string, limit: 'user' | 'address'): number {
  const line = new RegExp(`^bubble_http_rate_limited_total\\{limit="${limit}"\\} (\\d+)`, 'm');
  return Number(line.exec(metrics)?.[1] ?? 0);
}

describe('client-route limits', () => {
  const apps = useApps('redis', 'climits');
  const start = (gateway: AppOptions['gateway'] = {}) =>
    apps.start({ gateway: { trustedProxies: LOOPBACK_PROXY, ...gateway } });

  it('with the defaults, a user polling at 50/s is refused after the burst; users polling at X-Poll-Interval never are', async () => {
    const app = await start({ basePollSeconds: 1 });
    const greedy = await tokenFor('greedy');
    const calm = await tokenFor('calm');
    const neighbour = await tokenFor('neighbour');
    const calmReplies: Reply[] = [];
    const neighbourReplies: Reply[] = [];
    let stop = false;
    // At its X-Poll-Interval: one from another address, one from the greedy user's own address.
    const pollNormally = async (token: string, address: string, into: Reply[]) => {
      while (!stop) {
        const reply = await client(app, token, 'GET', '/v1/badge', { headers: from(address) });
        into.push(reply);
        const interval = Number(reply.headers.get('x-poll-interval'));
        await new Promise((resolve) => setTimeout(resolve, (interval || 1) * 1000));
      }
    };
    const calmRun = pollNormally(calm, '198.51.100.2', calmReplies);
    const neighbourRun = pollNormally(neighbour, '198.51.100.1', neighbourReplies);
    const greedyStatuses: number[] = [];
    let refused: Reply | undefined;
    try {
      refused = await waitFor(
        async () => {
          const reply = await client(app, greedy, 'GET', '/v1/badge', {
            headers: from('198.51.100.1'),
          });
          greedyStatuses.push(reply.status);
          if (reply.status === 429) return reply;
          // 50 polls a second (20 ms apart), 50 times the fastest interval the server asks for.
          await new Promise((resolve) => setTimeout(resolve, 20));
          return undefined;
        },
        { timeoutMs: 30_000, intervalMs: 0, message: 'the greedy poller was never refused' },
      );
      // A few more: refused while it keeps going far above the interval.
      for (let i = 0; i < 5; i++) {
        const again = await client(app, greedy, 'GET', '/v1/badge', {
          headers: from('198.51.100.1'),
        });
        greedyStatuses.push(again.status);
      }
      // Both normal pollers got at least two answers while the greedy one was refused.
      await waitFor(() => calmReplies.length >= 2 && neighbourReplies.length >= 2, {
        timeoutMs: 30_000,
        message: 'the normal pollers did not poll',
      });
    } finally {
      stop = true;
      await Promise.all([calmRun, neighbourRun]);
    }
    expectRateLimited(refused!, 1);
    // Not before the burst was spent.
    expect(greedyStatuses.indexOf(429)).toBeGreaterThanOrEqual(DEFAULT_CLIENT_LIMITS.perUser.burst);
    expect(greedyStatuses.slice(-3)).toContain(429);
    expect(calmReplies.map((r) => r.status).every((s) => s === 200 || s === 304)).toBe(true);
    expect(neighbourReplies.map((r) => r.status).every((s) => s === 200 || s === 304)).toBe(true);
    const metrics = await metricsText(app);
    expect(refusals(metrics, 'user')).toBeGreaterThanOrEqual(1);
    expect(refusals(metrics, 'address')).toBe(0);
  }, 60_000);

  it('every client route counts against the same per-user bucket; the platform routes do not', async () => {
    const app = await start({ clientLimits: { perUser: SLOW, perAddress: UNLIMITED } });
    const token = await tokenFor('clicker');
    await platform(app, 'PUT', '/v1/conversations/c1/members', { body: { members: ['clicker'] } });
    const calls: Array<[string, string, unknown?]> = [
      ['GET', '/v1/badge'],
      ['POST', '/v1/badge/read', { scope: 'feed' }],
      ['GET', '/v1/conversations'],
    ];
    for (const [method, path, body] of calls) {
      const reply = await client(app, token, method, path, body === undefined ? {} : { body });
      expect(reply.status, reply.text).toBe(200);
    }
    for (const [method, path, body] of [
      ...calls,
      ['PUT', '/v1/conversations/c1/mute', { muted: true }] as [string, string, unknown],
    ]) {
      const reply = await client(app, token, method, path, body === undefined ? {} : { body });
      expectRateLimited(reply, 100);
    }
    // The platform's calls, from the same address, for the same user: never limited by these.
    for (let i = 0; i < 10; i++)
      expect((await platform(app, 'GET', '/v1/users/clicker/badge')).status).toBe(200);
  });

  it('a refused request runs no Redis command and is refused before its body is read', async () => {
    const store = apps.newStore() as RedisStore;
    const app = await apps.start(
      { gateway: { clientLimits: { perUser: SLOW, perAddress: UNLIMITED } } },
      store,
    );
    const admin = (store.redis as Redis).duplicate();
    try {
      const token = await tokenFor('spender');
      for (let i = 0; i < SLOW.burst; i++)
        expect((await client(app, token, 'GET', '/v1/badge')).status).toBe(200);
      await admin.config('RESETSTAT');
      for (let i = 0; i < 20; i++) {
        expectRateLimited(await client(app, token, 'GET', '/v1/badge'), 100);
        expectRateLimited(await client(app, token, 'GET', '/v1/conversations'), 100);
        // Not JSON at all: parsed, it would be a 400.
        expectRateLimited(
          await client(app, token, 'POST', '/v1/badge/read', {
            rawBody: '{"scope":',
            headers: { 'content-type': 'application/json' },
          }),
          100,
        );
      }
      const during = await commandStats(admin);
      expect([...during.keys()].filter((c) => c !== 'config' && c !== 'info')).toEqual([]);
      // The measure can see commands: an admitted user's poll runs some.
      const other = await tokenFor('other');
      expect((await client(app, other, 'GET', '/v1/badge')).status).toBe(200);
      const after = await commandStats(admin);
      expect(
        [...after.keys()].filter((c) => c !== 'config' && c !== 'info').length,
      ).toBeGreaterThan(0);
    } finally {
      admin.disconnect();
    }
  });

  it('attributes requests through a trusted proxy by X-Forwarded-For; from anyone else the header is ignored', async () => {
    const app = await start({ clientLimits: { perUser: UNLIMITED, perAddress: SLOW } });
    const users = await Promise.all(['a', 'b', 'c', 'd', 'e'].map((user) => tokenFor(user)));
    // Many users behind one client address share its bucket.
    const first = from('198.51.100.7, 10.1.2.3');
    for (let i = 0; i < SLOW.burst; i++)
      expect((await client(app, users[i]!, 'GET', '/v1/badge', { headers: first })).status).toBe(
        200,
      );
    expectRateLimited(await client(app, users[3]!, 'GET', '/v1/badge', { headers: first }), 100);
    // A spoofed left part does not make another client: the right-most untrusted one is it.
    expectRateLimited(
      await client(app, users[4]!, 'GET', '/v1/badge', {
        headers: from('203.0.113.99, 198.51.100.7'),
      }),
      100,
    );
    // Another client behind the proxy, one over IPv6, and the proxy itself are not refused.
    expect(
      (await client(app, users[4]!, 'GET', '/v1/badge', { headers: from('198.51.100.8') })).status,
    ).toBe(200);
    expect(
      (await client(app, users[4]!, 'GET', '/v1/badge', { headers: from('2001:db8::8') })).status,
    ).toBe(200);
    expect((await client(app, users[4]!, 'GET', '/v1/badge')).status).toBe(200);
    // Even a request without a valid token spends its address's token: refused 429, not 401.
    expectRateLimited(
      await call(app, 'GET', '/v1/badge', {
        headers: { ...first, authorization: 'Bearer nonsense' },
      }),
      100,
    );
    const metrics = await metricsText(app);
    expect(refusals(metrics, 'address')).toBe(3);
    expect(refusals(metrics, 'user')).toBe(0);

    // Loopback not trusted: X-Forwarded-For is ignored, every caller is loopback.
    const untrusting = await apps.start({
      gateway: {
        trustedProxies: parseCidrList('10.0.0.0/8'),
        clientLimits: { perUser: UNLIMITED, perAddress: SLOW },
      },
    });
    for (let i = 0; i < SLOW.burst; i++) {
      const reply = await client(untrusting, users[i]!, 'GET', '/v1/badge', {
        headers: from(`198.51.100.${20 + i}`),
      });
      expect(reply.status).toBe(200);
    }
    expectRateLimited(
      await client(untrusting, users[4]!, 'GET', '/v1/badge', { headers: from('198.51.100.99') }),
      100,
    );
  });

  it('keeps its address table bounded under a flood of distinct addresses', async () => {
    const maxTracked = 500;
    const app = await start({ clientLimits: { perUser: SLOW, perAddress: SLOW, maxTracked } });
    const limits = app.gateway.clientLimits!;
    let peak = 0;
    // Unauthenticated, as a flood of made-up addresses would be: each still spends a token.
    for (let batch = 0; batch < 15; batch++) {
      await Promise.all(
        Array.from({ length: 100 }, async (_, i) => {
          const n = batch * 100 + i;
          const reply = await call(app, 'GET', '/v1/badge', {
            headers: from(`198.18.${n >> 8}.${n & 255}`),
          });
          expect(reply.status).toBe(401);
        }),
      );
      peak = Math.max(peak, limits.tracked.addresses);
    }
    expect(peak).toBeGreaterThan(maxTracked / 2);
    expect(peak).toBeLessThanOrEqual(maxTracked);
  });
});
