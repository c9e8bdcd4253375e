/**
 * The dashboard's ingest-stream panel in a real browser (Debian's Chromium, playwright-core):
 * a `bubble all` on a real redis-server with two ingest partitions and offline delivery
 * configured, a poison entry dead-lettered in partition 1. The panel must show both partitions
 * with their backlog, the dead letter flagged, and the offline-delivery queue. Skipped only when
 * /usr/bin/chromium is missing.
 */
import { RedisKeys } from '@bubble/store';
import { freePort, RoleProcess, uniquePrefix, waitFor } from '@bubble/test-utils';
import { Redis } from 'ioredis';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRoleRig, type RoleRig } from '../support/role-rig.js';
import { CHROMIUM, CHROMIUM_ARGS, HAS_CHROMIUM, watchPage } from '../support/chromium.js';
import { skippedWithout } from '../support/missing-tools.js';

const API_KEY = 'dashboard-ingest-api-key-7e3f19c2b05a48d6';
const JWT_SECRET = 'dashboard-ingest-jwt-secret-2a6c0e94f17b3d58';

const SHOWS = 'the dashboard shows the ingest stream';

describe.skipIf(skippedWithout('chromium', HAS_CHROMIUM, SHOWS))(SHOWS, () => {
  let rig: RoleRig | undefined;
  let direct: Redis | undefined;
  let gateway: RoleProcess | undefined;
  let browser: Browser | undefined;
  const prefix = uniquePrefix('dash-ingest');
  const keys = new RedisKeys(prefix, 100);

  beforeAll(async () => {
    rig = await startRoleRig('dash-ingest');
    direct = new Redis(rig.redis.url, { maxRetriesPerRequest: 1 });
    gateway = new RoleProcess({
      role: 'all',
      port: await freePort(),
      cwd: rig.cwd,
      env: {
        REDIS_URL: rig.redis.url,
        BUBBLE_KEY_PREFIX: prefix,
        BUBBLE_API_KEY: API_KEY,
        BUBBLE_JWT_SECRET: JWT_SECRET,
        BUBBLE_INGEST_PARTITIONS: '2',
        // Nothing listens there: only the queue's figures are read.
        BUBBLE_WEBHOOK_URL: `http://127.0.0.1:${await freePort()}/push`,
        BUBBLE_WEBHOOK_SECRET: 'dashboard-ingest-webhook-secret-5b8e2d41',
        LOG_LEVEL: 'info',
      },
    });
    await gateway.listening(30_000);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await gateway?.kill();
    direct?.disconnect();
    await rig?.stop();
  });

  it('a row per partition (lag, pending, oldest pending, dead letters, flagged) and the offline-delivery queue', async () => {
    await direct!.xadd(keys.ingest(1), '*', 'v', '1', 'op', 'explode', 'body', '{}');
    await waitFor(async () => (await direct!.xlen(keys.ingestDead(1))) === 1, {
      timeoutMs: 15_000,
      message: `the poison entry was never dead-lettered\n${gateway!.describe()}`,
    });

    const page = await browser!.newPage({ viewport: { width: 1280, height: 900 } });
    const { problems } = watchPage(page);
    await page.goto(`${gateway!.url}/dashboard`);
    await page.locator('#api-key').fill(API_KEY);
    await page.getByRole('button', { name: 'Show cluster' }).click();

    const section = page.locator('#ingest-section');
    await section.waitFor({ state: 'visible', timeout: 15_000 });
    const rows = await waitFor(
      async () => {
        const cells = await page
          .locator('#ingest tr')
          .evaluateAll((trs) =>
            trs.map((tr) =>
              [...tr.querySelectorAll('td')].map((td) => [
                td.textContent ?? '',
                td.getAttribute('data-state') ?? '',
              ]),
            ),
          );
        return cells.length === 2 && cells[1]![4]![0] === '1' ? cells : null;
      },
      { timeoutMs: 15_000, intervalMs: 250, message: 'the panel never showed the dead letter' },
    );
    expect(rows!.map((row) => row.map(([text]) => text))).toEqual([
      ['0', '0', '0', '–', '0'],
      ['1', '0', '0', '–', '1'],
    ]);
    expect(rows![0]![4]![1]).toBe('');
    expect(rows![1]![4]![1]).toBe('error');

    await expect(page.locator('#webhook-cards').isVisible()).resolves.toBe(true);
    expect(await page.locator('#webhook-queued').textContent()).toBe('0');
    expect(await page.locator('#webhook-retrying').textContent()).toBe('0');
    expect(await page.locator('#webhook-dead').textContent()).toBe('0');
    expect(problems).toEqual([]);
    await page.close();
  });
});
