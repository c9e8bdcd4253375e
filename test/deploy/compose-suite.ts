/**
 * The suite of compose.test.ts and compose-cluster.test.ts: a compose file run as local
 * processes by compose-runner (no Docker engine here): every service with its own command and environment, core scaled to
 * 3, depends_on honoured. The cluster then has to serve exact badges (on demand, and from the
 * cores' sweeps for a user made online through the presence API) and spread the 100 pools over
 * the 3 cores. Debian's docker-compose (v1.29) has to accept each file.
 */
import { spawnSync } from 'node:child_process';
import { decodeBadgeState, type ClusterStatus } from '@bubble/protocol';
import { RedisKeys } from '@bubble/store';
import { waitFor } from '@bubble/test-utils';
import { Cluster as RedisCluster, Redis } from 'ioredis';
import YAML from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildOnce, ROOT } from '../support/build.js';
import { skippedWithout } from '../support/missing-tools.js';
import {
  ComposeRun,
  composeConfig,
  dependencies,
  dockerCompose,
  serviceEnvironment,
  type ComposeFile,
} from './compose-runner.js';

/** What `.env` holds: two secrets of at least 32 bytes (.env.example leaves them empty). */
const SECRETS = {
  BUBBLE_API_KEY: 'compose-test-api-key-0b7d2f9e41c86a35',
  BUBBLE_JWT_SECRET: 'compose-test-jwt-secret-5e18c3a0f7d94b62',
};
const CORES = 3;

interface Badge {
  feed: number;
}

export function describeComposeFile(file: string, store: 'standalone' | 'cluster') {
  describe(`${file}, run as processes`, () => {
    let run: ComposeRun;
    let storeRedis: Redis | RedisCluster;

    beforeAll(async () => {
      await buildOnce();
      run = await ComposeRun.start({
        root: ROOT,
        file,
        variables: SECRETS,
        scale: { core: CORES },
      });
      storeRedis =
        store === 'standalone'
          ? new Redis(run.of('redis')[0]!.port(6379), '127.0.0.1', { maxRetriesPerRequest: 1 })
          : new RedisCluster(
              ['redis-node-1', 'redis-node-2', 'redis-node-3'].map((name) => ({
                host: '127.0.0.1',
                port: run.of(name)[0]!.port(6379),
              })),
            );
    }, 150_000);

    afterAll(async () => {
      storeRedis?.disconnect();
      await run?.down();
    }, 60_000);

    const gateway = (published: number) => {
      const { port } = run.published(published);
      return `http://127.0.0.1:${port}`;
    };

    async function platform(base: string, method: string, route: string, body?: unknown) {
      const res = await fetch(base + route, {
        method,
        headers: {
          'x-api-key': SECRETS.BUBBLE_API_KEY,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      return { status: res.status, body: text === '' ? undefined : (JSON.parse(text) as unknown) };
    }

    async function ok(base: string, method: string, route: string, body: unknown, status: number) {
      const reply = await platform(base, method, route, body);
      expect(reply.status, `${method} ${route} ${JSON.stringify(reply.body)}`).toBe(status);
      return reply.body;
    }

    it('starts every service after what it depends on was healthy (or completed)', () => {
      for (const [name, service] of Object.entries(run.file.services)) {
        expect(run.of(name).length, name).toBe(name === 'core' ? CORES : (service.scale ?? 1));
        for (const [dep, condition] of dependencies(service)) {
          expect(condition, `${name} -> ${dep}`).not.toBe('service_started');
          const depReady = Math.max(...run.of(dep).map((i) => i.readyAt!));
          const started = Math.min(...run.of(name).map((i) => i.startedAt));
          expect(depReady, `${dep} was ready before ${name} started`).toBeLessThanOrEqual(started);
        }
        if (service.restart === 'no') {
          expect(run.of(name).every((i) => i.exit?.code === 0)).toBe(true);
        } else {
          expect(service.healthcheck?.test, `${name} has a healthcheck`).toBeTruthy();
          for (const instance of run.of(name)) expect(run.healthcheck(instance)).toBe(0);
        }
      }
    });

    it("runs Redis as bubble needs it: no role warns that Redis can lose bubble's state", () => {
      const bubbleServices = ['server', 'core', 'gateway-1', 'gateway-2'];
      const warned = bubbleServices.flatMap((name) =>
        run
          .of(name)
          .flatMap((i) =>
            i.warnings.filter((w) => /Redis/.test(w.msg)).map((w) => `${i.name}: ${w.msg}`),
          ),
      );
      expect(warned).toEqual([]);
    });

    it('spreads the 100 pools over the 3 cores', async () => {
      const base = gateway(8080);
      const status = (await waitFor(
        async (): Promise<ClusterStatus | false> => {
          const s = (await ok(base, 'GET', '/v1/cluster', undefined, 200)) as ClusterStatus;
          const cores = s.nodes.filter((n) => n.role === 'core').map((n) => n.id);
          if (cores.length !== CORES || s.pools.length !== 100) return false;
          const counts = cores.map((core) => s.pools.filter((p) => p.owner === core).length);
          return counts.every((c) => c >= 33 && c <= 34) && counts.reduce((a, b) => a + b) === 100
            ? s
            : false;
        },
        { timeoutMs: 45_000, intervalMs: 250, message: 'the pools never spread over 3 cores' },
      )) as ClusterStatus;
      expect(new Set(status.pools.map((p) => p.owner)).size).toBe(CORES);
    });

    it('serves exact badges through both gateways, and from the sweeps for an online user', async () => {
      const [first, second] = [gateway(8080), gateway(8081)];
      const now = Date.now();
      for (const author of ['a1', 'a2']) {
        await ok(first, 'PUT', `/v1/users/u-off/follows/${author}`, undefined, 204);
      }
      await ok(second, 'PUT', '/v1/users/u-on/follows', { authors: ['a1'] }, 204);
      await ok(first, 'POST', '/v1/presence', { user: 'u-on', online: true, ttlMs: 120_000 }, 204);
      const posts = [
        { author: 'a1', id: 'p1', ts: now - 5_000 },
        { author: 'a1', id: 'p2', ts: now - 4_000 },
        { author: 'a1', id: 'p3', ts: now - 3_000 },
        { author: 'a2', id: 'p4', ts: now - 2_000 },
        { author: 'a3', id: 'p5', ts: now - 1_000 },
      ];
      expect(await ok(second, 'POST', '/v1/posts', { posts }, 202)).toEqual({
        accepted: 5,
        ignored: 0,
      });
      // On demand, by either gateway: u-off follows a1 (3 posts) and a2 (1); a3 is not followed.
      for (const base of [first, second]) {
        expect(
          ((await ok(base, 'GET', '/v1/users/u-off/badge', undefined, 200)) as Badge).feed,
        ).toBe(4);
        expect(
          ((await ok(base, 'GET', '/v1/users/u-on/badge', undefined, 200)) as Badge).feed,
        ).toBe(3);
      }
      // The sweeps of whichever core owns u-on's pool store its badge: 3, then 4 after a post.
      const keys = new RedisKeys(run.of('core')[0]!.env.BUBBLE_KEY_PREFIX!, 100);
      const stored = async () => {
        const packed = await storeRedis.hget(keys.badgeOf('u-on'), 'u-on');
        return packed === null ? null : (decodeBadgeState(packed).fields.f ?? 0);
      };
      await waitFor(async () => (await stored()) === 3, {
        timeoutMs: 20_000,
        message: 'no sweep stored u-on feed=3',
      });
      await ok(first, 'POST', '/v1/posts', { author: 'a1', id: 'p6', ts: Date.now() - 500 }, 202);
      await waitFor(async () => (await stored()) === 4, {
        timeoutMs: 20_000,
        message: 'no sweep stored u-on feed=4',
      });
      expect(
        ((await ok(second, 'GET', '/v1/users/u-on/badge', undefined, 200)) as Badge).feed,
      ).toBe(4);
    });

    it('runs the operator commands of docs/deployment.md in a gateway container', async () => {
      const gatewayEnv = run.of('gateway-1')[0]!.env;
      const bubble = (...args: string[]) =>
        spawnSync(process.execPath, ['packages/cli/bin/bubble.js', ...args], {
          cwd: ROOT,
          env: gatewayEnv,
          encoding: 'utf8',
          timeout: 30_000,
        });
      // `docker compose run --rm gateway-1 token u1`: a JWT the gateways accept.
      const token = bubble('token', 'u-token');
      expect(token.status, token.stderr).toBe(0);
      const res = await fetch(`${gateway(8081)}/v1/badge`, {
        headers: { authorization: `Bearer ${token.stdout.trim()}` },
      });
      expect(res.status).toBe(200);
      expect(((await res.json()) as { user: string }).user).toBe('u-token');
      // `docker compose exec gateway-1 node packages/cli/bin/bubble.js status`
      const status = bubble('status', '--json');
      expect(status.status, status.stderr).toBe(0);
      const cluster = JSON.parse(status.stdout) as ClusterStatus;
      expect(cluster.nodes.filter((n) => n.role === 'core')).toHaveLength(CORES);
    });

    it.skipIf(skippedWithout('docker-compose', dockerCompose, `${file}: docker-compose config`))(
      'is accepted by docker-compose config, and names the missing secret without .env',
      () => {
        const accepted = composeConfig(ROOT, file, SECRETS);
        expect(accepted.status, accepted.stderr).toBe(0);
        // docker-compose's reading of the file (merge keys, interpolation) is the runner's.
        const rendered = YAML.parse(accepted.stdout) as ComposeFile;
        expect(Object.keys(rendered.services).sort()).toEqual(
          Object.keys(run.file.services).sort(),
        );
        for (const [name, service] of Object.entries(rendered.services)) {
          expect(serviceEnvironment(service), name).toEqual(
            serviceEnvironment(run.file.services[name]!),
          );
          expect(service.command, name).toEqual(run.file.services[name]!.command);
        }
        const refused = composeConfig(ROOT, file, {});
        expect(refused.status).not.toBe(0);
        expect(refused.stderr).toContain('BUBBLE_API_KEY');
      },
    );
  });
}
