/**
 * `bubble all` and `bubble token` as real processes: start, serve the HTTP contract, stop cleanly
 * on SIGTERM; refuse bad configuration before listening. Runs the built CLI (bin → dist), so
 * the workspace is compiled first (tsc -b is incremental).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  freePort,
  startRedisServer,
  uniquePrefix,
  waitFor,
  type RedisServerHandle,
} from '@bubble/test-utils';
import { decodeJwt } from 'jose';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv } from '../support/clean-env.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = path.join(ROOT, 'packages/cli/bin/bubble.js');
const API_KEY = 'cli-test-api-key-93c1e08f5a2d7b64c9';
const JWT_SECRET = 'cli-test-jwt-secret-1b7e5a90d2c43f86';
const EXIT_DEADLINE_MS = 15_000;

interface Run {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const running = new Set<ChildProcess>();
let cwd: string;

function bubble(args: string[], env: Record<string, string>): Run {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd,
    env: cleanEnv({ LOG_LEVEL: 'info', ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let out = '';
  let err = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
  child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => {
      running.delete(child);
      resolve({ code, signal });
    });
  });
  return { child, stdout: () => out, stderr: () => err, exited };
}

/** Resolves with the exit, or fails the test once the deadline passes. */
async function exitWithin(run: Run, ms = EXIT_DEADLINE_MS) {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new Error(
            `the process did not exit within ${ms} ms\n--- stdout\n${run.stdout()}\n--- stderr\n${run.stderr()}`,
          ),
        ),
      ms,
    );
  });
  try {
    return await Promise.race([run.exited, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

async function waitHealthy(run: Run, url: string): Promise<void> {
  await waitFor(
    async () => {
      if (run.child.exitCode !== null) {
        throw new Error(`bubble exited early: ${run.child.exitCode}\n${run.stderr()}`);
      }
      return (await fetch(`${url}/healthz`)).status === 200;
    },
    { timeoutMs: 20_000, intervalMs: 50, message: `bubble all never became healthy at ${url}` },
  );
}

/** `bubble token <user>` as its own process; returns the printed JWT. */
async function mint(user: string, env: Record<string, string>, extra: string[] = []) {
  const run = bubble(['token', user, ...extra], env);
  const { code } = await exitWithin(run);
  expect(code, run.stderr()).toBe(0);
  const token = run.stdout().trim();
  expect(token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
  return token;
}

/** follow → post → badge through the running process. */
async function roundTrip(url: string, apiKey: string, token: string): Promise<void> {
  const platform = { 'x-api-key': apiKey, 'content-type': 'application/json' };
  const followed = await fetch(`${url}/v1/users/u1/follows/a1`, {
    method: 'PUT',
    headers: platform,
  });
  expect(followed.status).toBe(204);
  const posted = await fetch(`${url}/v1/posts`, {
    method: 'POST',
    headers: platform,
    body: JSON.stringify({ author: 'a1', id: 'p1', ts: Date.now() - 1000 }),
  });
  expect(posted.status).toBe(202);
  expect(await posted.json()).toEqual({ accepted: 1, ignored: 0 });
  const badge = await fetch(`${url}/v1/badge`, { headers: { authorization: `Bearer ${token}` } });
  expect(badge.status).toBe(200);
  expect(await badge.json()).toMatchObject({ user: 'u1', feed: 1, total: 1, display: '1' });
  expect((await fetch(`${url}/v1/badge`, { headers: { 'x-api-key': apiKey } })).status).toBe(401);
}

describe('bubble CLI processes', () => {
  let redis: RedisServerHandle | undefined;

  beforeAll(async () => {
    // bin/bubble.js runs dist/; make sure it reflects the sources.
    try {
      execFileSync('npx', ['tsc', '-b'], { cwd: ROOT, stdio: 'pipe', timeout: 240_000 });
    } catch (err) {
      const output = err as { stdout?: Buffer; stderr?: Buffer };
      throw new Error(`tsc -b failed:\n${output.stdout?.toString()}${output.stderr?.toString()}`);
    }
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

  afterEach(() => {
    for (const child of running) child.kill('SIGKILL');
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
      await waitHealthy(run, url);
      expect((await fetch(`${url}/readyz`)).status).toBe(200);

      const token = await mint('u1', { BUBBLE_JWT_SECRET: JWT_SECRET });
      await roundTrip(url, API_KEY, token);
      expect(run.stdout()).toContain('bubble all is listening');
      expect(run.stdout()).toContain(`http://localhost:${port}`);
      // configured secrets: no development banner
      expect(run.stderr()).not.toContain('API key');
      expect(run.stdout()).not.toContain(API_KEY);
      expect(run.stdout()).not.toContain(JWT_SECRET);

      run.child.kill('SIGTERM');
      const exit = await exitWithin(run);
      expect(exit, run.stderr()).toEqual({ code: 0, signal: null });
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
    await waitHealthy(run, url);
    const nodes = await waitFor(
      async () => {
        const res = await fetch(`${url}/v1/cluster`, { headers: { 'x-api-key': API_KEY } });
        const status = (await res.json()) as { nodes: Array<{ role: string; url?: string }> };
        const roles = new Set(status.nodes.map((n) => n.role));
        return ['server', 'core', 'gateway'].every((r) => roles.has(r)) ? status.nodes : null;
      },
      { timeoutMs: 15_000, message: `every role in the node list\n${run.stderr()}` },
    );
    expect(nodes!.map((n) => n.url)).toEqual(nodes!.map(() => advertised));
  });

  it('a BUBBLE_ADVERTISE_URL that is not an http(s) URL stops the process naming it', async () => {
    const run = bubble(['all'], {
      PORT: String(await freePort()),
      BUBBLE_ADVERTISE_URL: 'ftp://x',
    });
    const exit = await exitWithin(run);
    expect(exit.code).toBe(1);
    expect(run.stderr()).toContain('BUBBLE_ADVERTISE_URL');
  });

  it('bubble all in development generates secrets, prints them, and bubble token uses them', async () => {
    const port = await freePort();
    const run = bubble(['all'], { PORT: String(port) });
    const url = `http://127.0.0.1:${port}`;
    await waitHealthy(run, url);
    const banner = await waitFor(() => /API key:\s+(\S+)/.exec(run.stderr()), {
      message: 'no development banner',
    });
    expect(run.stderr()).toContain(`http://localhost:${port}`);
    expect(run.stderr()).toContain('bubble token');
    const token = await mint('u1', {});
    await roundTrip(url, banner![1]!, token);
    run.child.kill('SIGTERM');
    expect(await exitWithin(run)).toEqual({ code: 0, signal: null });
  });

  it('bubble token prints a JWT for the user with the requested lifetime', async () => {
    const token = await mint('u1', { BUBBLE_JWT_SECRET: JWT_SECRET }, ['--ttl', '90s']);
    const claims = decodeJwt(token);
    expect(claims.sub).toBe('u1');
    expect(claims.exp! - claims.iat!).toBe(90);

    const bad = bubble(['token', 'bad id'], { BUBBLE_JWT_SECRET: JWT_SECRET });
    expect((await exitWithin(bad)).code).not.toBe(0);
    expect(bad.stdout()).toBe('');
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
    ['BUBBLE_DEV', 'yes'],
  ])('a bad %s stops bubble all with a message naming it', async (name, value) => {
    const port = await freePort();
    const run = bubble(['all'], {
      PORT: String(port),
      BUBBLE_API_KEY: API_KEY,
      BUBBLE_JWT_SECRET: JWT_SECRET,
      [name]: value,
    });
    const exit = await exitWithin(run);
    expect(exit.code).not.toBe(0);
    expect(exit.code).not.toBeNull();
    expect(run.stderr()).toContain(name);
    expect(run.stdout()).not.toContain('listening');
  });

  it.each([
    ['BUBBLE_JWT_SECRET', { BUBBLE_API_KEY: API_KEY }],
    ['BUBBLE_API_KEY', { BUBBLE_JWT_SECRET: JWT_SECRET }],
  ])(
    'in production a missing %s stops bubble all before it listens',
    async (name, secrets: Record<string, string>) => {
      const port = await freePort();
      const run = bubble(['all'], { PORT: String(port), NODE_ENV: 'production', ...secrets });
      const exit = await exitWithin(run);
      expect(exit.code).not.toBe(0);
      expect(exit.code).not.toBeNull();
      expect(run.stderr()).toContain(name);
      expect(run.stdout()).not.toContain('listening');
      expect(run.stderr()).not.toContain('bubble is running');
    },
  );
});
