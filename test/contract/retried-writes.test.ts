/**
 * A retried platform write never loses its change-log event (issue 16, item 2). The gateway's
 * store goes through a TCP proxy that lets one write run and then cuts the connection before
 * its reply arrives, refusing reconnects until the call has failed: the HTTP call answers 5xx,
 * as the platform sees a store failure between the write and its append. The platform retries,
 * the store reports the write done before, and the held user's badge must still be right after
 * a sweep or two of a core that reads Redis directly and never reconciles (reconcilePerSweep 0),
 * so only the change log can bring the core the change.
 *
 * On one redis-server the write and its append are one script; on Redis Cluster (the author's
 * or user's slot apart from the log's) the write leaves an "unlogged" marker that the retry
 * finds and appends. Follow changes append their reload event even when the write was a no-op.
 */
import type { CoreNode } from '@bubble/core';
import { DAY_MS, decodeFields } from '@bubble/protocol';
import { RedisStore } from '@bubble/store';
import {
  startRedisCluster,
  startRedisServer,
  TcpProxy,
  uniquePrefix,
  type RedisClusterHandle,
  type RedisServerHandle,
} from '@bubble/test-utils';
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_KEY, startApp, tokenFor, type App } from '../http/support.js';
import { httpCall, type Reply } from '../support/http.js';
import { startSoloCore } from '../support/solo-core.js';

const POOLS = 16;
/** Short, so a command whose reply was cut fails within a second (production: 5 s). */
const COMMAND_TIMEOUT_MS = 1_000;

type Mode = 'one redis-server' | 'redis cluster';

interface Rig {
  app: App;
  core: CoreNode;
  coreStore: RedisStore;
  proxies: TcpProxy[];
  close(): Promise<void>;
}

async function startRig(mode: Mode): Promise<Rig> {
  const prefix = uniquePrefix('retried');
  const proxies: TcpProxy[] = [];
  let server: RedisServerHandle | undefined;
  let cluster: RedisClusterHandle | undefined;
  let gatewayClient: Redis | Cluster;
  let coreStore: RedisStore;
  if (mode === 'one redis-server') {
    server = await startRedisServer();
    const proxy = await TcpProxy.start({ port: server.port });
    proxies.push(proxy);
    gatewayClient = new Redis(proxy.url, clientOptions());
    coreStore = new RedisStore({ url: server.url, keyPrefix: prefix, pools: POOLS });
  } else {
    cluster = await startRedisCluster({ masters: 3 });
    for (const node of cluster.nodes) proxies.push(await TcpProxy.start({ port: node.port }));
    // The nodes announce their own ports: map each to its proxy so every command goes through.
    const natMap = Object.fromEntries(
      cluster.nodes.map((node, i) => [
        `${node.host}:${node.port}`,
        { host: proxies[i]!.host, port: proxies[i]!.port },
      ]),
    );
    gatewayClient = new Cluster(
      proxies.map((p) => ({ host: p.host, port: p.port })),
      { natMap, enableAutoPipelining: true, redisOptions: clientOptions() },
    );
    coreStore = new RedisStore({
      clusterNodes: cluster.nodes.map((n) => `${n.host}:${n.port}`),
      keyPrefix: prefix,
      pools: POOLS,
    });
  }
  gatewayClient.on('error', () => {});
  const gatewayStore = new RedisStore({ client: gatewayClient, keyPrefix: prefix, pools: POOLS });
  const app = await startApp(gatewayStore, { rules: { followCap: 100 } });
  const core = await startSoloCore(coreStore, { id: 'core-retried', reconcilePerSweep: 0 });
  return {
    app,
    core,
    coreStore,
    proxies,
    async close() {
      await app.close();
      await core.close();
      await coreStore.close();
      gatewayClient.disconnect();
      await Promise.all(proxies.map((p) => p.close()));
      await server?.stop();
      await cluster?.stop();
    },
  };
}

function clientOptions() {
  return {
    maxRetriesPerRequest: 2,
    commandTimeout: COMMAND_TIMEOUT_MS,
    enableAutoPipelining: true,
  };
}

for (const mode of ['one redis-server', 'redis cluster'] as const) {
  describe(`a retried write keeps its change-log event [${mode}]`, () => {
    let rig: Rig;
    const now = Date.now();

    beforeAll(async () => {
      rig = await startRig(mode);
    }, 60_000);

    afterAll(async () => {
      await rig?.close();
    });

    const platform = (method: string, path: string, body?: unknown): Promise<Reply> =>
      httpCall(rig.app.url, method, path, { apiKey: API_KEY, body });

    async function platformOk(method: string, path: string, body: unknown, status: number) {
      const reply = await platform(method, path, body);
      expect(reply.status, `${method} ${path}: ${reply.text}`).toBe(status);
    }

    /**
     * The call, with the connection cut right after the command matching `pattern` ran: 5xx.
     * Then the proxy heals and the same call, retried, answers `status`.
     */
    async function failThenRetry(
      pattern: RegExp,
      method: string,
      path: string,
      body: unknown,
      status: number,
    ) {
      const cut = Promise.race(rig.proxies.map((proxy) => proxy.cutAfterReply(pattern)));
      const failed = await platform(method, path, body);
      await cut;
      for (const proxy of rig.proxies) {
        proxy.disarm();
        proxy.heal();
      }
      // 503 when the client saw the connection go, 500 when the command timed out.
      expect([500, 503], `the cut call answered ${failed.status} ${failed.text}`).toContain(
        failed.status,
      );
      // Retried as a platform retries a 5xx: a cluster client still reconnecting may refuse
      // once more; what counts is that the write, once accepted, kept its event.
      const deadline = Date.now() + 10_000;
      let retried = await platform(method, path, body);
      while (retried.status >= 500 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        retried = await platform(method, path, body);
      }
      expect(retried.status, `${method} ${path}: ${retried.text}`).toBe(status);
    }

    async function online(user: string) {
      await platformOk('POST', '/v1/presence', { user, online: true, ttlMs: 600_000 }, 204);
    }

    /** The feed count of `user`'s stored badge after `sweeps` sweeps of the core. */
    async function feedAfterSweeps(user: string, sweeps = 2): Promise<number> {
      for (let i = 0; i < sweeps; i++) await rig.core.sweepNow();
      return (await rig.coreStore.badges.load(user))?.fields.f ?? 0;
    }

    it('a post whose reply was cut, retried, is counted', async () => {
      await platformOk('PUT', '/v1/users/alice/follows/bob', undefined, 204);
      await online('alice');
      await platformOk('POST', '/v1/posts', { author: 'bob', id: 'p1', ts: now - 60_000 }, 202);
      expect(await feedAfterSweeps('alice')).toBe(1);

      await failThenRetry(
        /\{a:bob\}:posts/,
        'POST',
        '/v1/posts',
        { posts: [{ author: 'bob', id: 'p2', ts: now - 50_000 }] },
        202,
      );
      expect(await feedAfterSweeps('alice')).toBe(2);
      // Once logged, nothing is left marked unlogged (Redis Cluster's markers; none on one server).
      const { redis, keys } = rig.coreStore;
      expect(await redis.zcard(keys.unloggedPosts('bob'))).toBe(0);
    });

    it('a delete whose reply was cut, retried, is uncounted', async () => {
      await platformOk('PUT', '/v1/users/dan/follows/erin', undefined, 204);
      await online('dan');
      const posts = [
        { author: 'erin', id: 'kept', ts: now - 40_000 },
        { author: 'erin', id: 'doomed', ts: now - 30_000 },
      ];
      await platformOk('POST', '/v1/posts', { posts }, 202);
      expect(await feedAfterSweeps('dan')).toBe(2);

      await failThenRetry(/doomed/, 'DELETE', '/v1/posts/erin/doomed', undefined, 204);
      expect(await feedAfterSweeps('dan')).toBe(1);
    });

    /** `user` follows (PUT) or unfollows (DELETE) gus, the first reply cut, then retried. */
    const failThenRetryFollow = (method: 'PUT' | 'DELETE', user: string) =>
      failThenRetry(
        new RegExp(`\\{u:${user}\\}:follows`),
        method,
        `/v1/users/${user}/follows/gus`,
        undefined,
        204,
      );

    it('a follow whose reply was cut, retried, reloads the user', async () => {
      const posts = [
        { author: 'gus', id: 'g1', ts: now - 40_000 },
        { author: 'gus', id: 'g2', ts: now - 30_000 },
      ];
      await platformOk('POST', '/v1/posts', { posts }, 202);
      await online('carol');
      expect(await feedAfterSweeps('carol')).toBe(0);

      await failThenRetryFollow('PUT', 'carol');
      expect(await feedAfterSweeps('carol')).toBe(2);
    });

    it('an unfollow whose reply was cut, retried, reloads the user', async () => {
      await platformOk('PUT', '/v1/users/hal/follows/gus', undefined, 204);
      await online('hal');
      expect(await feedAfterSweeps('hal')).toBe(2);

      await failThenRetryFollow('DELETE', 'hal');
      expect(await feedAfterSweeps('hal')).toBe(0);
    });

    /** The unread count of conversation `id` in `user`'s stored badge after two sweeps. */
    async function unreadAfterSweeps(user: string, id: string): Promise<number> {
      await rig.core.sweepNow();
      await rig.core.sweepNow();
      const stored = await rig.coreStore.badges.load(user);
      return stored ? (decodeFields(stored.fields).conversations[id] ?? 0) : 0;
    }

    const message = (id: string, seq: number) =>
      platformOk('POST', `/v1/conversations/${id}/messages`, { seq, from: 'kim' }, 202);

    /** A call to /v1/conversations/<id><rest>, its reply cut (at its members key), retried. */
    const failThenRetryIn = (
      id: string,
      method: string,
      rest: string,
      body?: unknown,
      status = 204,
    ) =>
      failThenRetry(
        new RegExp(`\\{c:${id}\\}:members`),
        method,
        `/v1/conversations/${id}${rest}`,
        body,
        status,
      );

    /** `user` and kim in conversation `id`, online, with one message from kim unread. */
    async function oneUnreadBy(user: string, id: string): Promise<void> {
      await platformOk('PUT', `/v1/conversations/${id}/members`, { members: ['kim', user] }, 204);
      await online(user);
      await message(id, 1);
      expect(await unreadAfterSweeps(user, id)).toBe(1);
    }

    it('a join whose reply was cut, retried, counts the conversation for the new member', async () => {
      await platformOk('PUT', '/v1/conversations/cv/members', { members: ['kim'] }, 204);
      await online('jay');
      await rig.core.sweepNow();

      await failThenRetryIn('cv', 'POST', '/members', { members: ['jay'] });
      await message('cv', 1);
      expect(await unreadAfterSweeps('jay', 'cv')).toBe(1);
    });

    it('a removal whose reply was cut, retried, drops the conversation', async () => {
      await oneUnreadBy('lea', 'cw');

      await failThenRetryIn('cw', 'DELETE', '/members/lea');
      expect(await unreadAfterSweeps('lea', 'cw')).toBe(0);
    });

    it('a dissolve whose reply was cut, retried, drops the conversation', async () => {
      await oneUnreadBy('max', 'cx');

      await failThenRetryIn('cx', 'DELETE', '');
      expect(await unreadAfterSweeps('max', 'cx')).toBe(0);
      const { redis, keys } = rig.coreStore;
      expect(await redis.exists(keys.conversationUnlogged('cx'))).toBe(0);
      expect(await redis.sismember(keys.userConversations('max'), 'cx')).toBe(0);
    });

    it("a sender's message whose reply was cut, retried, stays read for the sender", async () => {
      await oneUnreadBy('ole', 'cy');

      await failThenRetryIn('cy', 'POST', '/messages', { seq: 2, from: 'ole' }, 202);
      // Ole's own message moved their cursor past kim's: nothing unread.
      expect(await unreadAfterSweeps('ole', 'cy')).toBe(0);
    });

    it('a notice whose reply was cut, retried, is counted', async () => {
      await online('ivy');
      // The first sight starts ivy's notice cursor: notices published later count.
      const token = await tokenFor('ivy');
      const seen = await httpCall(rig.app.url, 'GET', '/v1/badge', { token });
      expect(seen.status).toBe(200);
      await rig.core.sweepNow();

      await failThenRetry(/notice:\{g\}:live/, 'POST', '/v1/notices', { id: 7 }, 202);
      await rig.core.sweepNow();
      await rig.core.sweepNow();
      expect((await rig.coreStore.badges.load('ivy'))?.fields).toMatchObject({ n: 1 });
    });

    it('a first sight whose reply was cut, retried, counts later notices', async () => {
      await online('nia');
      await rig.core.sweepNow();
      const token = await tokenFor('nia');
      const read = () => httpCall(rig.app.url, 'GET', '/v1/badge', { token });
      // The seeUser call that sets the cursor (the highest id as digits, not "-").
      const settingCursor = /marks:\{u:nia\}\r\n\$\d+\r\n\d+\r\n\$\d+\r\n\d+\r\n/;
      const cut = Promise.race(rig.proxies.map((proxy) => proxy.cutAfterReply(settingCursor)));
      const failed = await read();
      await cut;
      for (const proxy of rig.proxies) {
        proxy.disarm();
        proxy.heal();
      }
      expect([500, 503], `the cut call answered ${failed.status}`).toContain(failed.status);
      expect((await read()).status).toBe(200);

      await platformOk('POST', '/v1/notices', { id: 11 }, 202);
      await rig.core.sweepNow();
      await rig.core.sweepNow();
      expect((await rig.coreStore.badges.load('nia'))?.fields).toMatchObject({ n: 1 });
      const { redis, keys } = rig.coreStore;
      expect(await redis.hexists(keys.marks('nia'), 'unlogged')).toBe(0);
    });

    it('an inactive-user run cut before its end, run again, drops the marks held', async () => {
      await online('pia');
      const token = await tokenFor('pia');
      expect((await httpCall(rig.app.url, 'GET', '/v1/badge', { token })).status).toBe(200);
      await platformOk('POST', '/v1/notices', { id: 21 }, 202);
      await rig.core.sweepNow();
      await rig.core.sweepNow();
      expect((await rig.coreStore.badges.load('pia'))?.fields).toMatchObject({ n: 1 });

      // A month on (offline: an online user counts as seen), the job drops pia's marks and
      // badge state; the cut is after its last step's reply.
      await platformOk('POST', '/v1/presence', { user: 'pia', online: false }, 204);
      await rig.core.sweepNow();
      rig.app.clock.advance(40 * DAY_MS);
      const settling = /marks:\{g\}:lastseen\r\n\$\d+\r\n\d+\r\n\$\d+\r\n[a-z]+\r\n/;
      const cut = Promise.race(rig.proxies.map((proxy) => proxy.cutAfterReply(settling)));
      await expect(rig.app.service.dropInactiveUsers(100)).rejects.toThrow();
      await cut;
      for (const proxy of rig.proxies) {
        proxy.disarm();
        proxy.heal();
      }
      await rig.app.service.dropInactiveUsers(100);
      const { redis, keys } = rig.coreStore;
      expect(await redis.exists(...keys.inactiveUserKeys('pia'))).toBe(0);
      expect(await rig.coreStore.badges.load('pia')).toBeNull();
      // Back online she starts afresh: unseen again, she counts no notices, in a new epoch.
      await online('pia');
      await rig.core.sweepNow();
      await rig.core.sweepNow();
      expect((await rig.coreStore.badges.load('pia'))?.fields.n ?? 0).toBe(0);
    });
  });
}
