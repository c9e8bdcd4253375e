/**
 * The demo page (GET /demo) in a real browser: Debian's Chromium driven by playwright-core,
 * against `bubble all` run as a process in development mode. Signs in with just a user id (the
 * gateway mints a development token), watches a post arrive live, reads it.
 *
 * Runs the built CLI, so the workspace is compiled first (tsc -b is incremental). The process
 * runs in a temporary directory: its generated secrets (.bubble-dev/) stay out of the repository.
 * Skipped only when /usr/bin/chromium is missing (.ci/run installs it).
 */
import { mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BubbleProcess, freePort, RoleProcess } from '@bubble/test-utils';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildOnce } from '../support/build.js';
import { CHROMIUM, CHROMIUM_ARGS, HAS_CHROMIUM } from '../support/chromium.js';
import { skippedWithout } from '../support/missing-tools.js';
import { httpCall } from '../support/http.js';
/** Sweeps run every second in `bubble all`; a push should land well within this. */
const LIVE_TIMEOUT_MS = 15_000;

/** `bubble all` on a free port in `cwd`, healthy. */
async function startBubble(cwd: string, env: Record<string, string> = {}): Promise<RoleProcess> {
  const all = new RoleProcess({
    role: 'all',
    port: await freePort(),
    cwd,
    env: { LOG_LEVEL: 'warn', ...env },
  });
  try {
    await all.waitHttpOk(`${all.url}/readyz`, 20_000);
  } catch (err) {
    await all.stop(10_000);
    throw err;
  }
  return all;
}

/** What `bubble <args>` printed, run in `cwd` to its end; it must succeed. */
async function bubbleOutput(cwd: string, args: string[], env: Record<string, string> = {}) {
  const run = await BubbleProcess.run({ args, cwd, env: { LOG_LEVEL: 'warn', ...env } });
  expect(run.code, run.stderr).toBe(0);
  return run.stdout;
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

describe.skipIf(skippedWithout('chromium', HAS_CHROMIUM, 'the demo page in Chromium'))(
  HAS_CHROMIUM
    ? 'the demo page in Chromium'
    : `the demo page in Chromium (skipped: no ${CHROMIUM})`,
  () => {
    let work: string;
    let cwd: string;
    let dev: RoleProcess | undefined;
    let url: string;
    let apiKey: string;
    let context: BrowserContext | undefined;
    let shots: string;

    beforeAll(async () => {
      // bin/bubble.js runs dist/, and the page loads the SDK from packages/client/dist.
      await buildOnce();
      work = mkdtempSync(path.join(tmpdir(), 'bubble-demo-'));
      cwd = path.join(work, 'cwd');
      mkdirSync(cwd);
      shots = process.env.BUBBLE_DEMO_SCREENSHOTS ?? path.join(work, 'shots');
      mkdirSync(shots, { recursive: true });

      // Development mode: no secrets configured, so they are generated into cwd/.bubble-dev/.
      dev = await startBubble(cwd);
      url = dev.url;

      // The generated API key, read the way a developer would (same cwd, same .bubble-dev/).
      const devEnv = await bubbleOutput(cwd, ['dev-env']);
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
      await dev?.stop(10_000);
      if (work) rmSync(work, { recursive: true, force: true });
    });

    it('signs in with a user id, shows a post live, and reads it', async () => {
      const page = context!.pages()[0] ?? (await context!.newPage());
      const problems: string[] = [];
      page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
      page.on('console', (msg) => {
        if (msg.type() === 'error') problems.push(`console error: ${msg.text()}`);
      });

      await page.goto(`${url}/demo`);
      await page.getByLabel('User id').fill('alice');
      await page.screenshot({ path: path.join(shots, 'demo-signin.png'), animations: 'disabled' });
      await page.getByRole('button', { name: 'Sign in' }).click();

      await expectText(page, '#display', '0');
      await expectText(page, '#state', 'open');
      await expectText(page, '#who', 'alice');
      expect(await page.getByRole('status').textContent()).toBe('0 unread');

      const followed = await httpCall(url, 'PUT', '/v1/users/alice/follows/bob', { apiKey });
      expect(followed.status).toBe(204);
      const post = { author: 'bob', id: 'p1', ts: Date.now() - 1000 };
      const posted = await httpCall(url, 'POST', '/v1/posts', { apiKey, body: post });
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
      expect(dev!.stderr).not.toMatch(/"level":(50|60)/);
    });

    it('with configured secrets mints no token and signs in with a given one', async () => {
      const secrets = {
        BUBBLE_API_KEY: 'demo-test-api-key-0d4c7e19b2a85f63',
        BUBBLE_JWT_SECRET: 'demo-test-jwt-secret-6a1f93e0c4d7b258',
      };
      const prod = await startBubble(cwd, secrets);
      try {
        const minted = await httpCall(prod.url, 'POST', '/demo/token', { body: { user: 'carol' } });
        expect(minted.status).toBe(404);

        const page = await context!.newPage();
        await page.goto(`${prod.url}/demo`);
        await page.getByLabel('User id').fill('carol');
        await page.getByRole('button', { name: 'Sign in' }).click();
        await expectText(page, '#signin-error', 'A token is required.');

        const token = (
          await bubbleOutput(cwd, ['token', 'carol'], {
            BUBBLE_JWT_SECRET: secrets.BUBBLE_JWT_SECRET,
          })
        ).trim();
        await page.getByLabel('Token').fill(token);
        await page.getByRole('button', { name: 'Sign in' }).click();
        await expectText(page, '#display', '0');
        await expectText(page, '#state', 'open');
        await expectText(page, '#who', 'carol');
        await page.close();
      } finally {
        await prod.stop(10_000);
      }
    });
  },
);
