/**
 * GET /dashboard, `bubble status` and `bubble simulate` against a real `bubble all` process in
 * development mode (generated secrets in a temporary directory's .bubble-dev/, which status and
 * simulate find there). The dashboard's script also runs in Chromium when /usr/bin/chromium
 * exists. Runs the built CLI (bin → dist), so the workspace is compiled first.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BubbleProcess, freePort, waitFor } from '@bubble/test-utils';
import { chromium } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildOnce } from '../support/build.js';
import { CHROMIUM, CHROMIUM_ARGS, HAS_CHROMIUM, watchPage } from '../support/chromium.js';
import { skippedWithout } from '../support/missing-tools.js';
import { httpCall, jsonBody } from '../support/http.js';

const EXIT_DEADLINE_MS = 30_000;

const running: BubbleProcess[] = [];
let cwd: string;

function bubble(args: string[], env: Record<string, string> = {}): BubbleProcess {
  const run = new BubbleProcess({ args, cwd, env: { LOG_LEVEL: 'warn', ...env } });
  running.push(run);
  return run;
}

/** Runs a short-lived command to its end. */
async function complete(args: string[], env: Record<string, string> = {}) {
  const run = bubble(args, env);
  const exit = await run.waitExit(EXIT_DEADLINE_MS);
  return { ...exit, stdout: run.stdout, stderr: run.stderr };
}

interface Cluster {
  leader: string | null;
  pools: Array<{ pool: number; owner: string | null; online: number }>;
  nodes: Array<{ id: string; role: string }>;
  sweeps: Array<{ node: string }>;
}

async function cluster(url: string, apiKey: string): Promise<Cluster> {
  const reply = await httpCall(url, 'GET', '/v1/cluster', { apiKey });
  expect(reply.status).toBe(200);
  return jsonBody(reply) as Cluster;
}

/** Until a leader leads, every pool has an owner and the core has reported a sweep. */
async function settled(url: string, apiKey: string): Promise<Cluster> {
  return (await waitFor(
    async () => {
      const c = await cluster(url, apiKey);
      return c.leader !== null && c.pools.every((p) => p.owner !== null) && c.sweeps.length > 0
        ? c
        : null;
    },
    { timeoutMs: 20_000, intervalMs: 100, message: 'the cluster never settled' },
  ))!;
}

async function metric(url: string, name: string): Promise<number | undefined> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.split(' ')[1]);
}

const sha256 = (text: string) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;

describe('dashboard, bubble status and bubble simulate against bubble all', () => {
  let all: BubbleProcess | undefined;
  let port: number;
  let url: string;
  let apiKey: string;
  let leader: string;
  let core: string;

  beforeAll(async () => {
    await buildOnce();
    cwd = mkdtempSync(path.join(tmpdir(), 'bubble-dash-'));
    port = await freePort();
    url = `http://127.0.0.1:${port}`;
    // Development mode: no secrets configured, generated into cwd/.bubble-dev/.
    all = bubble(['all'], { PORT: String(port) });
    await all.waitHttpOk(`${url}/readyz`, 20_000);
    apiKey = (
      JSON.parse(readFileSync(path.join(cwd, '.bubble-dev', 'secrets.json'), 'utf8')) as {
        apiKey: string;
      }
    ).apiKey;
    const settledCluster = await settled(url, apiKey);
    leader = settledCluster.leader!;
    core = settledCluster.nodes.find((n) => n.role === 'core')!.id;
  }, 300_000);

  afterEach(async () => {
    await Promise.all(running.filter((run) => run !== all).map((run) => run.kill()));
  });

  afterAll(async () => {
    await all?.stop(EXIT_DEADLINE_MS);
    await Promise.all(running.splice(0).map((run) => run.kill()));
    if (cwd) rmSync(cwd, { recursive: true, force: true });
  });

  describe('GET /dashboard', () => {
    it('is a self-contained HTML page under a strict CSP that allows exactly its own blocks', async () => {
      const res = await fetch(`${url}/dashboard`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(res.headers.get('cache-control')).toBe('no-store');
      expect(res.headers.get('x-frame-options')).toBe('DENY');
      const csp = res.headers.get('content-security-policy') ?? '';
      const directives = new Map(
        csp.split(';').map((d) => {
          const [name, ...values] = d.trim().split(/\s+/);
          return [name!, values] as const;
        }),
      );
      expect(directives.get('default-src')).toEqual(["'none'"]);
      expect(directives.get('connect-src')).toEqual(["'self'"]);
      expect(directives.get('frame-ancestors')).toEqual(["'none'"]);
      expect(directives.get('form-action')).toEqual(["'none'"]);

      const html = await res.text();
      expect(html).toContain('<title>bubble dashboard</title>');
      for (const id of ['leader', 'pools', 'owners', 'nodes', 'sweeps', 'ws-connections']) {
        expect(html).toContain(`id="${id}"`);
      }
      expect(html).toContain('id="api-key" name="api-key" type="password"');
      expect(html).toContain('sessionStorage');
      expect(html).toContain('"x-api-key": key');
      // Exactly one inline script and one inline style, each allowed by its hash and nothing else.
      const scripts = [...html.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)];
      const styles = [...html.matchAll(/<style>([\s\S]*?)<\/style>/g)];
      expect(scripts).toHaveLength(1);
      expect(styles).toHaveLength(1);
      expect(scripts[0]![1]).not.toContain('src');
      expect(directives.get('script-src')).toEqual([sha256(scripts[0]![2]!)]);
      expect(directives.get('style-src')).toEqual([sha256(styles[0]![1]!)]);
      // Nothing loaded from anywhere, and no credential in the page.
      expect(html).not.toMatch(/\b(src|href)="(?!data:)/);
      expect(html).not.toMatch(/https?:\/\//);
      expect(html).not.toContain(apiKey);

      const head = await fetch(`${url}/dashboard`, { method: 'HEAD' });
      expect(head.status).toBe(200);
      expect(await head.text()).toBe('');
      const post = await fetch(`${url}/dashboard`, { method: 'POST' });
      expect(post.status).toBe(405);
    });

    it('the gateway reports its WebSocket connections on /metrics for the page', async () => {
      expect(await metric(url, 'bubble_ws_connections')).toBe(0);
      expect(await metric(url, 'bubble_gateway_users_held')).toBeGreaterThanOrEqual(0);
    });

    it.skipIf(skippedWithout('chromium', HAS_CHROMIUM, 'the status page in Chromium'))(
      'in Chromium: asks for the key, keeps it in sessionStorage only, shows the cluster',
      async () => {
        const browser = await chromium.launch({
          executablePath: CHROMIUM,
          args: CHROMIUM_ARGS,
        });
        try {
          const page = await browser.newPage();
          const { problems, requests } = watchPage(page);
          await page.goto(`${url}/dashboard`);
          const keyField = page.locator('#api-key');
          await keyField.waitFor({ state: 'visible' });
          expect(await page.locator('#cluster').isHidden()).toBe(true);

          // A wrong key is refused, said so, and not kept.
          await keyField.fill('not-the-key');
          await page.getByRole('button', { name: 'Show cluster' }).click();
          await expect
            .poll(() => page.locator('#key-error').textContent(), { timeout: 10_000 })
            .toContain('refused');
          expect(await page.evaluate('sessionStorage.length')).toBe(0);

          await keyField.fill(apiKey);
          await page.getByRole('button', { name: 'Show cluster' }).click();
          await expect
            .poll(() => page.locator('#leader').textContent(), { timeout: 10_000 })
            .toBe(leader);
          expect(await page.locator('#pools .cell').count()).toBe(100);
          expect(await page.locator('#pools .cell[data-owned="true"]').count()).toBe(100);
          expect(await page.locator('#owners').textContent()).toContain(core);
          expect(await page.locator('#nodes').textContent()).toContain('leader');
          expect(await page.locator('#sweeps').textContent()).toContain(core);
          expect(await page.locator('#ws-connections').textContent()).toBe('0');
          expect(await page.evaluate('Object.keys(sessionStorage)')).toEqual([
            'bubble.dashboard.apiKey',
          ]);
          expect(await page.evaluate('localStorage.length')).toBe(0);
          expect(await page.evaluate('document.cookie')).toBe('');

          // It refreshes by itself.
          const before = requests.filter((r) => r.endsWith('/v1/cluster')).length;
          await expect
            .poll(() => requests.filter((r) => r.endsWith('/v1/cluster')).length, {
              timeout: 10_000,
            })
            .toBeGreaterThan(before);

          await page.getByRole('button', { name: 'Forget key' }).click();
          expect(await page.evaluate('sessionStorage.length')).toBe(0);
          expect(await keyField.isVisible()).toBe(true);

          // No query but the history's `since` (a time, never a credential).
          const onlySince = (r: string) => !/\?(?!since=\d+$)/.test(r);
          expect(requests.every((r) => !r.includes(apiKey) && onlySince(r))).toBe(true);
          expect(requests.every((r) => r.startsWith(url))).toBe(true);
          // Only the wrong key's 401 may be reported (as a failed resource load).
          expect(problems.filter((p) => !p.includes('401'))).toEqual([]);
        } finally {
          await browser.close();
        }
      },
    );
  });

  describe('bubble status', () => {
    it('prints the leader, the nodes, the pools by owner and the sweeps (dev key, default URL)', async () => {
      const { code, stdout, stderr } = await complete(['status'], { PORT: String(port) });
      expect(code, stderr).toBe(0);
      expect(stdout).toContain(`bubble cluster at http://127.0.0.1:${port}`);
      expect(stdout).toMatch(new RegExp(`leader\\s+${leader}`));
      expect(stdout).toMatch(/pools\s+100 \(100 owned, 0 unowned\)/);
      expect(stdout).toMatch(new RegExp(`server \\*\\s+${leader}`));
      expect(stdout).toMatch(new RegExp(`A\\s+${core}\\s+100\\s+\\d+`));
      expect(stdout).toContain('   0  A A A A A A A A A A');
      expect(stdout).toContain('  90  A A A A A A A A A A');
      expect(stdout).toMatch(new RegExp(`LAST SWEEPS[\\s\\S]*${core}`));
      expect(stdout).not.toContain(apiKey);
    });

    it('--json prints the cluster status as JSON (URL from BUBBLE_URL)', async () => {
      const { code, stdout, stderr } = await complete(['status', '--json'], { BUBBLE_URL: url });
      expect(code, stderr).toBe(0);
      const parsed = JSON.parse(stdout) as Cluster & { generation: number; online: number };
      expect(parsed.leader).toBe(leader);
      expect(parsed.pools).toHaveLength(100);
      expect(parsed.pools[7]).toMatchObject({ pool: 7, owner: core });
      expect(parsed.nodes.map((n) => n.role).sort()).toEqual(['core', 'gateway', 'server']);
      expect(parsed.generation).toBeGreaterThan(0);
    });

    it('exits non-zero with a clear message when the key is refused or nothing answers', async () => {
      const wrong = await complete(['status', '--url', url], {
        BUBBLE_API_KEY: 'wrong-key-3f9a1c5e7b20d8164a9ce3f07b',
      });
      expect(wrong.code).not.toBe(0);
      expect(wrong.stdout).toBe('');
      expect(wrong.stderr).toContain('unauthorized');
      expect(wrong.stderr).toContain('BUBBLE_API_KEY');
      expect(wrong.stderr).not.toContain('wrong-key-3f9a1c5e7b20d8164a9ce3f07b');

      const nobody = `http://127.0.0.1:${await freePort()}`;
      const down = await complete(['status', '--url', nobody]);
      expect(down.code).not.toBe(0);
      expect(down.stdout).toBe('');
      expect(down.stderr).toContain(`cannot reach ${nobody}`);

      const withCredentials = await complete(['status', '--url', `http://u:p@127.0.0.1:${port}`]);
      expect(withCredentials.code).not.toBe(0);
      expect(withCredentials.stderr).toContain('must not carry credentials');
    });
  });

  describe('bubble simulate', () => {
    it('--duration 3s drives the gateway, receives pushes, exits 0 and closes its sockets', async () => {
      const run = bubble(
        [
          'simulate',
          '--url',
          url,
          '--users',
          '80',
          '--clients',
          '16',
          '--rate',
          '30',
          '--duration',
          '3s',
          '--json',
        ],
        {},
      );
      const exit = await run.waitExit(EXIT_DEADLINE_MS);
      expect(exit, run.stderr).toEqual({ code: 0, signal: null });
      const summary = JSON.parse(run.stdout) as {
        stoppedBy: string;
        follows: number;
        posts: { sent: number; accepted: number };
        pushes: { received: number };
        initialBadges: number;
        clients: { target: number; peak: number };
        errors: { total: number; samples: Record<string, number> };
      };
      expect(summary.stoppedBy).toBe('duration');
      expect(summary.follows).toBeGreaterThan(80);
      expect(summary.posts.sent).toBeGreaterThan(30);
      expect(summary.posts.accepted).toBe(summary.posts.sent);
      expect(summary.clients).toMatchObject({ target: 16, peak: 16 });
      expect(summary.initialBadges).toBe(16);
      expect(summary.pushes.received).toBeGreaterThan(0);
      expect(summary.errors, JSON.stringify(summary.errors.samples)).toMatchObject({ total: 0 });
      // Live progress on stderr, and no credential anywhere in the output.
      expect(run.stderr).toMatch(/posts \d+\/s \(\d+\) · pushes \d+\/s \(\d+\) · clients \d+\/16/);
      expect(run.stdout + run.stderr).not.toContain(apiKey);
      // Every socket was closed on the way out.
      await waitFor(async () => (await metric(url, 'bubble_ws_connections')) === 0, {
        timeoutMs: 5000,
        message: 'simulated sockets left open',
      });
    });

    it('Ctrl-C stops it cleanly: sockets closed, summary printed, exit 0', async () => {
      const run = bubble([
        'simulate',
        '--url',
        url,
        '--users',
        '40',
        '--clients',
        '8',
        '--rate',
        '10',
        '--duration',
        '10m',
      ]);
      await waitFor(() => /clients 8\/8/.test(run.stderr), {
        timeoutMs: 20_000,
        message: `no progress with every client connected:\n${run.stderr}`,
      });
      expect(await metric(url, 'bubble_ws_connections')).toBe(8);
      run.signal('SIGINT');
      const exit = await run.waitExit(10_000);
      expect(exit, run.stderr).toEqual({ code: 0, signal: null });
      expect(run.stdout).toContain('stopped by a signal');
      expect(run.stdout).toMatch(/clients\s+8\/8 connected at the end/);
      await waitFor(async () => (await metric(url, 'bubble_ws_connections')) === 0, {
        timeoutMs: 5000,
        message: 'simulated sockets left open',
      });
    });

    it('refuses out-of-range flags before touching the gateway', async () => {
      const cases = [
        ['--users', '1'],
        ['--clients', '10001'],
        ['--rate', '-1'],
        ['--duration', '0s'],
        ['--users', '10', '--clients', '11'],
        ['--prefix', 'bad prefix'],
      ];
      const results = await Promise.all(
        cases.map((args) => complete(['simulate', '--url', url, '--duration', '1h', ...args])),
      );
      results.forEach((result, i) => {
        const args = cases[i]!.join(' ');
        expect(result.code, args).not.toBe(0);
        expect(result.stderr, args).toMatch(/--(users|clients|rate|duration|prefix)/);
        expect(result.stdout, args).toBe('');
      });
    });
  });
});

describe('with BUBBLE_INTERNAL_PORT, the dashboard is on the operator port', () => {
  const API_KEY = 'dash-test-api-key-5d2e8a0c3f71b946e2';
  let run: BubbleProcess | undefined;

  beforeAll(() => {
    cwd = mkdtempSync(path.join(tmpdir(), 'bubble-dash-internal-'));
  });
  afterAll(async () => {
    await run?.stop(EXIT_DEADLINE_MS);
    rmSync(cwd, { recursive: true, force: true });
  });

  it('serves /dashboard and a keyed /v1/cluster there, and neither page on the public port', async () => {
    const [publicPort, internalPort] = [await freePort(), await freePort()];
    run = bubble(['all'], {
      PORT: String(publicPort),
      BUBBLE_INTERNAL_PORT: String(internalPort),
      BUBBLE_API_KEY: API_KEY,
      BUBBLE_JWT_SECRET: 'dash-test-jwt-secret-8c41e0b75d29a3f6',
    });
    const internal = `http://127.0.0.1:${internalPort}`;
    const publicUrl = `http://127.0.0.1:${publicPort}`;
    await run.waitHttpOk(`${internal}/readyz`, 20_000);
    expect((await fetch(`${internal}/dashboard`)).status).toBe(200);
    expect((await fetch(`${publicUrl}/dashboard`)).status).toBe(404);
    expect((await fetch(`${internal}/v1/cluster`)).status).toBe(401);
    const c = await settled(internal, API_KEY);
    expect(c.pools).toHaveLength(100);
    expect(await metric(internal, 'bubble_ws_connections')).toBe(0);

    const status = await complete(['status', '--json', '--url', internal], {
      BUBBLE_API_KEY: API_KEY,
    });
    expect(status.code, status.stderr).toBe(0);
    expect((JSON.parse(status.stdout) as Cluster).leader).toBe(c.leader);
  });
});
