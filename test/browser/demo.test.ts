/**
 * The demo page (GET /demo) in a real browser: Debian's Chromium driven by playwright-core,
 * against `bubble all` run as a process in development mode. Signs in with just a user id (the
 * gateway mints a development token), watches a post arrive live, reads it.
 *
 * Runs the built CLI, so the workspace is compiled first (tsc -b is incremental). The process
 * runs in a temporary directory: its generated secrets (.bubble-dev/) stay out of the repository.
 * Skipped only when /usr/bin/chromium is missing (.ci/run installs it).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, waitFor } from '@bubble/test-utils';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM, CHROMIUM_ARGS, HAS_CHROMIUM } from '../support/chromium.js';
import { cleanEnv } from '../support/clean-env.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = path.join(ROOT, 'packages/cli/bin/bubble.js');
/** Sweeps run every second in `bubble all`; a push should land well within this. */
const LIVE_TIMEOUT_MS = 15_000;

if (!HAS_CHROMIUM) {
  console.warn(
    `test/browser/demo.test.ts: skipped, ${CHROMIUM} not found (install Debian's chromium: apt-get install -y chromium)`,
  );
}

interface Bubble {
  url: string;
  stderr(): string;
  stop(): Promise<void>;
}

/** `bubble all` on a free port in `cwd`, healthy. */
async function startBubble(cwd: string, env: Record<string, string> = {}): Promise<Bubble> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child: ChildProcess = spawn(process.execPath, [BIN, 'all'], {
    cwd,
    env: cleanEnv({ LOG_LEVEL: 'warn', PORT: String(port), ...env }),
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  };
  try {
    await waitFor(
      async () => {
        if (child.exitCode !== null) throw new Error(`bubble all exited early:\n${stderr}`);
        return (await fetch(`${url}/healthz`).catch(() => null))?.status === 200;
      },
      { timeoutMs: 20_000, intervalMs: 50, message: `bubble all never became healthy at ${url}` },
    );
  } catch (err) {
    await stop();
    throw err;
  }
  return { url, stderr: () => stderr, stop };
}

/** Polls `locator.textContent()` until it equals `text`. */
async function expectText(page: Page, selector: string, text: string, timeout = LIVE_TIMEOUT_MS) {
  await expect
    .poll(() => page.locator(selector).textContent(), {
      timeout,
      interval: 100,
      message: `${selector} never showed ${JSON.stringify(text)}`,
    })
    .toBe(text);
}

describe.skipIf(!HAS_CHROMIUM)(
  HAS_CHROMIUM
    ? 'the demo page in Chromium'
    : `the demo page in Chromium (skipped: no ${CHROMIUM})`,
  () => {
    let work: string;
    let cwd: string;
    let dev: Bubble | undefined;
    let url: string;
    let apiKey: string;
    let context: BrowserContext | undefined;
    let shots: string;

    beforeAll(async () => {
      // bin/bubble.js runs dist/, and the page loads the SDK from packages/client/dist.
      try {
        execFileSync('npx', ['tsc', '-b'], { cwd: ROOT, stdio: 'pipe', timeout: 240_000 });
      } catch (err) {
        const output = err as { stdout?: Buffer; stderr?: Buffer };
        throw new Error(`tsc -b failed:\n${output.stdout?.toString()}${output.stderr?.toString()}`);
      }
      work = mkdtempSync(path.join(tmpdir(), 'bubble-demo-'));
      cwd = path.join(work, 'cwd');
      mkdirSync(cwd);
      shots = process.env.BUBBLE_DEMO_SCREENSHOTS ?? path.join(work, 'shots');
      mkdirSync(shots, { recursive: true });

      // Development mode: no secrets configured, so they are generated into cwd/.bubble-dev/.
      dev = await startBubble(cwd);
      url = dev.url;

      // The generated API key, read the way a developer would (same cwd, same .bubble-dev/).
      const devEnv = execFileSync(process.execPath, [BIN, 'dev-env'], {
        cwd,
        env: cleanEnv({ LOG_LEVEL: 'warn' }),
        encoding: 'utf8',
      });
      apiKey = /BUBBLE_API_KEY='([^']+)'/.exec(devEnv)![1]!;

      context = await chromium.launchPersistentContext(path.join(work, 'profile'), {
        executablePath: CHROMIUM,
        headless: true,
        args: CHROMIUM_ARGS,
        viewport: { width: 820, height: 760 },
      });
    }, 300_000);

    afterAll(async () => {
      await context?.close();
      await dev?.stop();
      if (work) rmSync(work, { recursive: true, force: true });
    });

    it('signs in with a user id, shows a post live, and reads it', async () => {
      const page = context!.pages()[0] ?? (await context!.newPage());
      const problems: string[] = [];
      page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
      page.on('console', (msg) => {
        if (msg.type() === 'error') problems.push(`console error: ${msg.text()}`);
      });

      const platform = { 'x-api-key': apiKey, 'content-type': 'application/json' };
      await page.goto(`${url}/demo`);
      await page.getByLabel('User id').fill('alice');
      await page.screenshot({ path: path.join(shots, 'demo-signin.png'), animations: 'disabled' });
      await page.getByRole('button', { name: 'Sign in' }).click();

      await expectText(page, '#display', '0');
      await expectText(page, '#state', 'open');
      await expectText(page, '#who', 'alice');
      expect(await page.getByRole('status').textContent()).toBe('0 unread');

      const followed = await fetch(`${url}/v1/users/alice/follows/bob`, {
        method: 'PUT',
        headers: platform,
      });
      expect(followed.status).toBe(204);
      const posted = await fetch(`${url}/v1/posts`, {
        method: 'POST',
        headers: platform,
        body: JSON.stringify({ author: 'bob', id: 'p1', ts: Date.now() - 1000 }),
      });
      expect(posted.status).toBe(202);

      await expectText(page, '#display', '1');
      await expectText(page, '#feed', '1');
      expect(await page.locator('#bubble').getAttribute('data-zero')).toBe('false');
      await page.screenshot({ path: path.join(shots, 'demo-live.png'), animations: 'disabled' });

      await page.getByRole('button', { name: 'Read all' }).click();
      await expectText(page, '#display', '0');
      await expectText(page, '#feed', '0');

      const screenshot = path.join(shots, 'demo-read.png');
      await page.screenshot({ path: screenshot, fullPage: true, animations: 'disabled' });
      expect(statSync(screenshot).size).toBeGreaterThan(0);
      expect(statSync(path.join(shots, 'demo-live.png')).size).toBeGreaterThan(0);

      // The inline style and script passed the page's CSP, and nothing else failed.
      expect(problems).toEqual([]);
      expect(dev!.stderr()).not.toMatch(/"level":(50|60)/);
    });

    it('with configured secrets mints no token and signs in with a given one', async () => {
      const secrets = {
        BUBBLE_API_KEY: 'demo-test-api-key-0d4c7e19b2a85f63',
        BUBBLE_JWT_SECRET: 'demo-test-jwt-secret-6a1f93e0c4d7b258',
      };
      const prod = await startBubble(cwd, secrets);
      try {
        const minted = await fetch(`${prod.url}/demo/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ user: 'carol' }),
        });
        expect(minted.status).toBe(404);

        const page = await context!.newPage();
        await page.goto(`${prod.url}/demo`);
        await page.getByLabel('User id').fill('carol');
        await page.getByRole('button', { name: 'Sign in' }).click();
        await expectText(page, '#signin-error', 'A token is required.');

        const token = execFileSync(process.execPath, [BIN, 'token', 'carol'], {
          cwd,
          env: cleanEnv({ LOG_LEVEL: 'warn', BUBBLE_JWT_SECRET: secrets.BUBBLE_JWT_SECRET }),
          encoding: 'utf8',
        }).trim();
        await page.getByLabel('Token').fill(token);
        await page.getByRole('button', { name: 'Sign in' }).click();
        await expectText(page, '#display', '0');
        await expectText(page, '#state', 'open');
        await expectText(page, '#who', 'carol');
        await page.close();
      } finally {
        await prod.stop();
      }
    });
  },
);
