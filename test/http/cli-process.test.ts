/**
 * `bubble all` and `bubble token` as real processes: start, serve the HTTP contract, stop cleanly
 * on SIGTERM; refuse bad configuration before listening. Runs the built CLI (bin → dist), so
 * the workspace is compiled first (tsc -b is incremental).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  BubbleProcess,
  freePort,
  startRedisServer,
  uniquePrefix,
  waitFor,
  type RedisServerHandle,
} from '@bubble/test-utils';
import { decodeJwt } from 'jose';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildOnce } from '../support/build.js';
import { httpCall, jsonBody } from '../support/http.js';

const API_KEY = 'cli-test-api-key-93c1e08f5a2d7b64c9';
const JWT_SECRET = 'cli-test-jwt-secret-1b7e5a90d2c43f86';

const running: BubbleProcess[] = [];
let cwd: string;

function bubble(args: string[], env: Record<string, string>): BubbleProcess {
  const run = new BubbleProcess({ args, cwd, env: { LOG_LEVEL: 'info', ...env } });
  running.push(run);
  return run;
}

/** `bubble token <user>` as its own process; returns the printed JWT. */
async function mint(user: string, env: Record<string, string>, extra: string[] = []) {
  const run = bubble(['token', user, ...extra], env);
  const { code } = await run.waitExit();
  expect(code, run.stderr).toBe(0);
  const token = run.stdout.trim();
  expect(token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
  return token;
}

/** follow → post → badge through the running process. */
async function roundTrip(url: string, apiKey: string, token: string): Promise<void> {
  const followed = await httpCall(url, 'PUT', '/v1/users/u1/follows/a1', { apiKey });
  expect(followed.status).toBe(204);
  const post = { author: 'a1', id: 'p1', ts: Date.now() - 1000 };
  const posted = await httpCall(url, 'POST', '/v1/posts', { apiKey, body: post });
  expect(posted.status).toBe(202);
  expect(jsonBody(posted)).toEqual({ accepted: 1, ignored: 0 });
  const badge = await httpCall(url, 'GET', '/v1/badge', { token });
  expect(badge.status).toBe(200);
  expect(jsonBody(badge)).toMatchObject({ user: 'u1', feed: 1, total: 1, display: '1' });
  expect((await httpCall(url, 'GET', '/v1/badge', { apiKey })).status).toBe(401);
}

describe('bubble CLI processes', () => {
  let redis: RedisServerHandle | undefined;

  beforeAll(async () => {
    await buildOnce();
    redis = await startRedisServer();
  }, 300_000);

  afterAll(async () => {
    await redis?.stop();
  });

  beforeAll(() => {
    cwd = mkdtempSync(path.join(tmpdir(), 'bubble-cli-'));
  });
  afterAll(() => {
    rmSync(cwd, { recursive: true, force: true });
  });

  afterEach(async () => {
    await Promise.all(running.splice(0).map((run) => run.kill()));
  });

  for (const engine of ['memory', 'redis'] as const) {
    it(`bubble all [${engine}] serves follow → post → badge and exits 0 on SIGTERM`, async () => {
      const port = await freePort();
      const env: Record<string, string> = {
        PORT: String(port),
        BUBBLE_API_KEY: API_KEY,
        BUBBLE_JWT_SECRET: JWT_SECRET,
      };
      if (engine === 'redis') {
        env.REDIS_URL = redis!.url;
        env.BUBBLE_KEY_PREFIX = uniquePrefix('cli');
      }
      const run = bubble(['all'], env);
      const url = `http://127.0.0.1:${port}`;
      await run.waitHttpOk(`${url}/readyz`, 20_000);

      const token = await mint('u1', { BUBBLE_JWT_SECRET: JWT_SECRET });
      await roundTrip(url, API_KEY, token);
      expect(run.stdout).toContain('bubble all is listening');
      expect(run.stdout).toContain(`http://localhost:${port}`);
      // configured secrets: no development banner
      expect(run.stderr).not.toContain('API key');
      expect(run.stdout).not.toContain(API_KEY);
      expect(run.stdout).not.toContain(JWT_SECRET);

      run.signal('SIGTERM');
      const exit = await run.waitExit();
      expect(exit, run.stderr).toEqual({ code: 0, signal: null });
      await expect(fetch(`${url}/healthz`)).rejects.toThrow();
    });
  }

  it('bubble all lists itself in the cluster under BUBBLE_ADVERTISE_URL, every role it runs', async () => {
    const port = await freePort();
    const advertised = 'http://10.1.2.3:8080';
    const run = bubble(['all'], {
      PORT: String(port),
      BUBBLE_API_KEY: API_KEY,
      BUBBLE_JWT_SECRET: JWT_SECRET,
      REDIS_URL: redis!.url,
      BUBBLE_KEY_PREFIX: uniquePrefix('cli-advertise'),
      BUBBLE_ADVERTISE_URL: advertised,
    });
    const url = `http://127.0.0.1:${port}`;
    await run.waitHttpOk(`${url}/readyz`, 20_000);
    const nodes = await waitFor(
      async () => {
        const reply = await httpCall(url, 'GET', '/v1/cluster', { apiKey: API_KEY });
        const status = jsonBody(reply) as { nodes: Array<{ role: string; url?: string }> };
        const roles = new Set(status.nodes.map((n) => n.role));
        return ['server', 'core', 'gateway'].every((r) => roles.has(r)) ? status.nodes : null;
      },
      { timeoutMs: 15_000, message: `every role in the node list\n${run.stderr}` },
    );
    expect(nodes!.map((n) => n.url)).toEqual(nodes!.map(() => advertised));
  });

  it('a BUBBLE_ADVERTISE_URL that is not an http(s) URL stops the process naming it', async () => {
    const run = bubble(['all'], {
      PORT: String(await freePort()),
      BUBBLE_ADVERTISE_URL: 'ftp://x',
    });
    const exit = await run.waitExit();
    expect(exit.code).toBe(1);
    expect(run.stderr).toContain('BUBBLE_ADVERTISE_URL');
  });

  it('bubble all in development generates secrets, prints them, and bubble token uses them', async () => {
    const port = await freePort();
    const run = bubble(['all'], { PORT: String(port) });
    const url = `http://127.0.0.1:${port}`;
    await run.waitHttpOk(`${url}/readyz`, 20_000);
    const banner = await waitFor(() => /API key:\s+(\S+)/.exec(run.stderr), {
      message: 'no development banner',
    });
    expect(run.stderr).toContain(`http://localhost:${port}`);
    expect(run.stderr).toContain('bubble token');
    const token = await mint('u1', {});
    await roundTrip(url, banner![1]!, token);
    run.signal('SIGTERM');
    expect(await run.waitExit()).toEqual({ code: 0, signal: null });
  });

  it('bubble token prints a JWT for the user with the requested lifetime', async () => {
    const token = await mint('u1', { BUBBLE_JWT_SECRET: JWT_SECRET }, ['--ttl', '90s']);
    const claims = decodeJwt(token);
    expect(claims.sub).toBe('u1');
    expect(claims.exp! - claims.iat!).toBe(90);

    const bad = bubble(['token', 'bad id'], { BUBBLE_JWT_SECRET: JWT_SECRET });
    expect((await bad.waitExit()).code).not.toBe(0);
    expect(bad.stdout).toBe('');
  });

  it('bubble token carries BUBBLE_JWT_ISSUER and mints no lifetime beyond 30 days or the max token age', async () => {
    const env = { BUBBLE_JWT_SECRET: JWT_SECRET, BUBBLE_JWT_ISSUER: 'platform' };
    expect(decodeJwt(await mint('u1', env, ['--ttl', '30d'])).iss).toBe('platform');
    for (const [extra, ttl] of [
      [{}, '31d'],
      [{ BUBBLE_JWT_MAX_TOKEN_AGE: '1h' }, '2h'],
    ] as const) {
      const run = bubble(['token', 'u1', '--ttl', ttl], { ...env, ...extra });
      expect((await run.waitExit()).code).not.toBe(0);
      expect(run.stdout).toBe('');
      expect(run.stderr).toContain('--ttl is at most');
    }
  });

  it.each([
    ['BUBBLE_POOLS', 'abc'],
    ['PORT', '70000'],
    ['BUBBLE_FOLLOW_CAP', '0'],
    ['LOG_LEVEL', 'loud'],
    ['BUBBLE_TRUSTED_PROXIES', '10.0.0.0/8,10.0.0.0/33'],
    ['BUBBLE_TRUSTED_PROXIES', 'proxy.internal'],
    ['BUBBLE_WS_CONNECT_RATE', '0'],
    ['BUBBLE_WS_CONNECT_BURST', '0.5'],
    ['BUBBLE_CLIENT_USER_RATE', '0'],
    ['BUBBLE_CLIENT_ADDRESS_BURST', 'many'],
    ['BUBBLE_DEV', 'yes'],
  ])('a bad %s stops bubble all with a message naming it', async (name, value) => {
    const port = await freePort();
    const run = bubble(['all'], {
      PORT: String(port),
      BUBBLE_API_KEY: API_KEY,
      BUBBLE_JWT_SECRET: JWT_SECRET,
      [name]: value,
    });
    const exit = await run.waitExit();
    expect(exit.code).not.toBe(0);
    expect(exit.code).not.toBeNull();
    expect(run.stderr).toContain(name);
    expect(run.stdout).not.toContain('listening');
  });

  it.each([
    ['BUBBLE_JWT_SECRET', { BUBBLE_API_KEY: API_KEY }],
    ['BUBBLE_API_KEY', { BUBBLE_JWT_SECRET: JWT_SECRET }],
  ])(
    'in production a missing %s stops bubble all before it listens',
    async (name, secrets: Record<string, string>) => {
      const port = await freePort();
      const run = bubble(['all'], { PORT: String(port), NODE_ENV: 'production', ...secrets });
      const exit = await run.waitExit();
      expect(exit.code).not.toBe(0);
      expect(exit.code).not.toBeNull();
      expect(run.stderr).toContain(name);
      expect(run.stdout).not.toContain('listening');
      expect(run.stderr).not.toContain('bubble is running');
    },
  );
});
