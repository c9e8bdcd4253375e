/**
 * One clock (issue 16, item 4): a core whose host clock runs 30 s ahead and a gateway whose
 * clock runs 30 s behind, under Debian's faketime (libfaketime). Presence, routes and node
 * liveness are decided on the store's clock (Redis TIME in the scripts), and the times the roles
 * compute themselves (a sweep's now, a read's cursor) on a clock synced to it, so the skew
 * changes nothing:
 *
 * - presence: no user held by either gateway lapses while held (no `offline` event in the pool
 *   logs), and after a kill -9 of the gateway behind, its users lapse within the presence TTL;
 * - pushes and badges: every socket's newest badge and every stored badge equal the brute-force
 *   definition (test/support/feed-definition.ts) after quiet, reads through the gateway behind
 *   included;
 * - node liveness: the leader lists every node, and after a kill -9 of the core ahead its pools
 *   are owned again within a lease and 2 s;
 * - writers: every accepted fenced write carries the newest token of its pool (the tokens in
 *   the published messages never go back).
 *
 * faketime forks the program it runs, so the CLI is started under it with setpriv inside too
 * (BubbleProcessOptions.runUnder): a kill -9 of faketime takes the CLI with it. libfaketime's
 * default (monotonic clocks shifted as well) runs node fine; FAKETIME_DONT_FAKE_MONOTONIC=1 is set
 * anyway, so timers and performance.now() run on the real monotonic clock.
 */
import { mulberry32, poolOf } from '@bubble/protocol';
import { findExecutable, waitFor, type RoleProcess } from '@bubble/test-utils';
import { describe, expect } from 'vitest';
import { WebSocket } from 'ws';
import { feedCount } from '../support/feed-definition.js';
import { httpCall } from '../support/http.js';
import { skippedWithout } from '../support/missing-tools.js';
import { useClusterTests } from './cluster-test.js';
import { API_KEY, type Cluster } from './harness.js';
import { heldFences } from './pool-tenures.js';

const FAKETIME = findExecutable('faketime');
const SKEW_S = 30;
const LEASE_MS = 2_000;
const TICK_MS = 200;
const PRESENCE_TTL_MS = 6_000;
/** Past the read of a cursor, how far a post's ts keeps clear of it (the synced clocks' error). */
const CLEAR_MS = 100;

function under(offsetSeconds: number): string[] {
  return [FAKETIME!, '-f', `${offsetSeconds > 0 ? '+' : ''}${offsetSeconds}s`];
}

const SKEWED_ENV = { FAKETIME_DONT_FAKE_MONOTONIC: '1' };

/** One user's socket, keeping the newest badge it was sent (greatest version in its epoch). */
class BadgeSocket {
  feed: number | undefined;
  private epoch = '';
  private version = 0;
  private readonly socket: WebSocket;
  readonly opened: Promise<void>;

  constructor(
    readonly user: string,
    readonly gateway: RoleProcess,
    token: string,
  ) {
    this.socket = new WebSocket(gateway.wsUrl, {
      headers: { authorization: `Bearer ${token}` },
      perMessageDeflate: false,
    });
    this.socket.on('message', (data: Buffer) => {
      const frame = JSON.parse(data.toString('utf8')) as {
        type: string;
        badge?: { epoch: string; version: number; feed: number };
      };
      if (frame.type !== 'badge' || !frame.badge) return;
      const { epoch, version, feed } = frame.badge;
      if (epoch === this.epoch && version <= this.version) return;
      this.epoch = epoch;
      this.version = version;
      this.feed = feed;
    });
    this.opened = new Promise((resolve, reject) => {
      this.socket.once('open', () => resolve());
      this.socket.once('error', reject);
    });
  }

  get open(): boolean {
    return this.socket.readyState === WebSocket.OPEN;
  }

  close(): void {
    this.socket.terminate();
  }
}

/** The `offline` events the pool logs hold for `users`, as "user" strings. */
async function offlineEvents(c: Cluster, users: readonly string[]): Promise<string[]> {
  const wanted = new Set(users);
  const pools = [...new Set(users.map((u) => poolOf(u, c.pools)))];
  const out: string[] = [];
  for (const pool of pools) {
    for (const [, fields] of await c.redis.xrange(c.keys.poolEvents(pool), '-', '+')) {
      const kind = fields[fields.indexOf('k') + 1];
      const user = fields[fields.indexOf('u') + 1]!;
      if (kind === 'offline' && wanted.has(user)) out.push(user);
    }
  }
  return out.sort();
}

const SKEWED = 'skewed clocks: a core 30 s ahead, a gateway 30 s behind';

describe.skipIf(skippedWithout('faketime', FAKETIME, SKEWED))(SKEWED, () => {
  const clusterTest = useClusterTests();

  clusterTest(
    'presence, routes, pushes and badges stay exact; node liveness and writers as with one clock',
    {
      label: 'skew',
      tag: 'skewed clocks',
      timeoutMs: 240_000,
      leaseMs: LEASE_MS,
      tickMs: TICK_MS,
    },
    async ({ c, seed, notes }) => {
      const ttl = { BUBBLE_PRESENCE_TTL_MS: String(PRESENCE_TTL_MS) };
      const [, coreOnTime, gatewayOnTime] = await Promise.all([
        c.spawn('server'),
        c.spawn('core'),
        // The first gateway started answers the platform calls (Cluster.platform).
        c.spawn('gateway', ttl),
      ]);
      // The skew is real: a process stamps its log lines with its own clock, and its listening
      // line was logged just now.
      const skewOf = (p: RoleProcess) => Math.round((p.lines.at(-1)!.time - Date.now()) / 1000);
      const coreAhead = await c.spawn('core', SKEWED_ENV, under(SKEW_S));
      const ahead = skewOf(coreAhead);
      const gatewayBehind = await c.spawn('gateway', { ...ttl, ...SKEWED_ENV }, under(-SKEW_S));
      const behind = skewOf(gatewayBehind);
      notes.push(`skews: ahead ${ahead} s, behind ${behind} s`);
      expect(ahead).toBeGreaterThan(SKEW_S - 5);
      expect(behind).toBeLessThan(-(SKEW_S - 5));

      await c.waitSettled([coreOnTime, coreAhead], c.settleMs);
      await c.subscribeChanges();

      // 24 users over both gateways, each following 3 of 6 authors.
      const users = Array.from({ length: 24 }, (_, i) => `sk${String(i).padStart(2, '0')}`);
      const authors = Array.from({ length: 6 }, (_, i) => `ska${i}`);
      const follows = new Map(
        users.map((u, i) => [u, new Set([0, 1, 3].map((k) => authors[(i + k) % authors.length]!))]),
      );
      const posts = new Map<string, { author: string; ts: number }>();
      const readAt = new Map<string, number>();
      const expected = (user: string) =>
        feedCount(posts, new Set(), follows.get(user)!, readAt.get(user), Date.now());
      for (const user of users) {
        await c.platformOk(
          'PUT',
          `/v1/users/${user}/follows`,
          { authors: [...follows.get(user)!] },
          204,
        );
      }
      const gatewayOf = (i: number) => (i % 2 === 0 ? gatewayOnTime : gatewayBehind);
      const sockets = await Promise.all(
        users.map(async (user, i) => new BadgeSocket(user, gatewayOf(i), await c.token(user))),
      );
      await Promise.all(sockets.map((s) => s.opened));
      await waitFor(() => sockets.every((s) => s.feed === 0), {
        timeoutMs: 10_000,
        message: 'not every socket got its first badge',
      });
      const behindUsers = sockets.filter((s) => s.gateway === gatewayBehind).map((s) => s.user);

      // Posts for two and a half presence TTLs, half through each gateway, and reads (without
      // upTo: the cursor moves to the gateway's now) through the gateway behind.
      const rand = mulberry32(seed);
      let seq = 0;
      let lastTs = 0;
      const runUntil = Date.now() + 2.5 * PRESENCE_TTL_MS;
      while (Date.now() < runUntil) {
        const author = authors[Math.floor(rand() * authors.length)]!;
        const ts = Date.now();
        const id = `p${++seq}`;
        const via = seq % 2 === 0 ? gatewayOnTime : gatewayBehind;
        const reply = await httpCall(via.url, 'POST', '/v1/posts', {
          body: { author, id, ts },
          apiKey: API_KEY,
        });
        expect(reply.status, `post ${id} through ${via.name}`).toBe(202);
        posts.set(`${author}/${id}`, { author, ts });
        lastTs = ts;
        if (seq % 5 === 0) {
          const user = behindUsers[Math.floor(rand() * behindUsers.length)]!;
          await waitFor(() => Date.now() > lastTs + CLEAR_MS, { timeoutMs: 1_000 });
          const read = await httpCall(gatewayBehind.url, 'POST', '/v1/badge/read', {
            body: { scope: 'feed' },
            token: await c.token(user),
          });
          expect(read.status, `read of ${user}`).toBe(200);
          const answeredAt = Date.now();
          readAt.set(user, answeredAt);
          await waitFor(() => Date.now() > answeredAt + CLEAR_MS, { timeoutMs: 1_000 });
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const quietSince = Date.now();

      // Nobody lapsed while held, on either gateway, in the pools of either core.
      expect(await offlineEvents(c, users), 'users held the whole time went offline').toEqual([]);
      // Every socket's newest badge, and every stored badge, is the definition's.
      let wrong: string[] = [];
      try {
        await waitFor(
          async () => {
            wrong = [];
            for (const s of sockets) {
              const want = expected(s.user);
              const stored = await c.storedFeed(s.user);
              if (s.feed !== want || stored !== want) {
                wrong.push(
                  `${s.user} on ${s.gateway.name}: pushed ${s.feed}, stored ${stored}, definition ${want}`,
                );
              }
            }
            return wrong.length === 0;
          },
          { timeoutMs: 20 * TICK_MS + 3_000, intervalMs: 100 },
        );
      } catch {
        throw new Error(`badges differ from the definition after quiet:\n  ${wrong.join('\n  ')}`);
      }
      // The leader sees every node live, the gateway behind and the core ahead included.
      const roles = (await c.status()).nodes.map((n) => n.role).sort();
      expect(roles, 'the live nodes the leader lists').toEqual([
        'core',
        'core',
        'gateway',
        'gateway',
        'server',
      ]);
      c.expectFencesInOrder();

      // kill -9 of the core ahead: its pools are owned again within a lease and 2 s.
      const taken = heldFences(coreAhead);
      await coreAhead.kill();
      const killedAt = Date.now();
      const deadlineMs = LEASE_MS + 2_000;
      await waitFor(
        () => {
          const held = heldFences(coreOnTime);
          return [...taken].every(([pool, fence]) => (held.get(pool) ?? 0) > fence);
        },
        {
          timeoutMs: deadlineMs,
          intervalMs: 20,
          message: `the ${taken.size} pools of the core ahead were not owned again within ${deadlineMs} ms`,
        },
      );
      const reownedMs = Date.now() - killedAt;

      // A post after the handover reaches every socket, exactly.
      const author = authors[0]!;
      const ts = Date.now();
      await c.platformOk('POST', '/v1/posts', { author, id: 'after-kill', ts }, 202);
      posts.set(`${author}/after-kill`, { author, ts });
      await waitFor(() => sockets.every((s) => s.feed === expected(s.user)), {
        timeoutMs: 20 * TICK_MS + 3_000,
        message: 'a post after the handover did not reach every socket exactly',
      });
      c.expectFencesInOrder();

      // kill -9 of the gateway behind: its users lapse within a presence TTL (and a sweep).
      await gatewayBehind.kill();
      const diedAt = Date.now();
      for (const s of sockets) if (s.gateway === gatewayBehind) s.close();
      await waitFor(
        async () => (await offlineEvents(c, behindUsers)).length === behindUsers.length,
        {
          timeoutMs: PRESENCE_TTL_MS + 2_000,
          intervalMs: 50,
          message: `the users of the dead gateway behind did not lapse within ${PRESENCE_TTL_MS + 2_000} ms`,
        },
      );
      const lapsedMs = Date.now() - diedAt;
      const onTimeUsers = users.filter((u) => !behindUsers.includes(u));
      expect(await offlineEvents(c, onTimeUsers)).toEqual([]);
      for (const s of sockets) if (s.gateway === gatewayOnTime) s.close();

      return (
        `${seq} posts over ${quietSince - (runUntil - 2.5 * PRESENCE_TTL_MS)} ms, ${readAt.size} users read ` +
        `through the gateway behind; no user lapsed while held; pools of the dead core ahead ` +
        `owned again after ${reownedMs} ms; users of the dead gateway behind lapsed after ${lapsedMs} ms`
      );
    },
  );
});
