/**
 * The dashboard's charts in a real browser: Debian's Chromium driven by playwright-core, against
 * a cluster of real processes (redis-server, `bubble server`, two `bubble core`, two `bubble
 * gateway`, built CLI) under a running `bubble simulate`. The page must draw its charts from the
 * history the gateway keeps (GET /v1/cluster/history), see them move, log no error and ask
 * nothing of any other origin. It leaves a screenshot at $TMPDIR/bubble-dashboard.png, or at
 * BUBBLE_DASHBOARD_SCREENSHOT when set (that is how docs/images/dashboard.png is made).
 * Skipped only when /usr/bin/chromium is missing (.ci/run installs it).
 */
import { statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BubbleProcess, waitFor, type RoleProcess } from '@bubble/test-utils';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { API_KEY, JWT_SECRET, Cluster } from '../cluster/harness.js';
import { buildOnce } from '../support/build.js';
import { CHROMIUM, CHROMIUM_ARGS, HAS_CHROMIUM, watchPage } from '../support/chromium.js';
import { skippedWithout } from '../support/missing-tools.js';

const SCREENSHOT =
  process.env.BUBBLE_DASHBOARD_SCREENSHOT ?? path.join(tmpdir(), 'bubble-dashboard.png');
/** A sample every 5 s: three of them, and a cluster that starts, well within this. */
const CHARTS_DEADLINE_MS = 90_000;
const CHART_IDS = [
  'chart-sweep',
  'chart-changed',
  'chart-pushes',
  'chart-connections',
  'chart-online',
  'chart-core-sweep',
  'chart-core-changed',
  'chart-drift',
  'chart-stale',
];

interface ChartState {
  id: string;
  caption: string;
  /** Points of each drawn line, in order. */
  lines: Array<Array<[number, number]>>;
  legend: string;
  timeTicks: string[];
}

/** What each chart shows, read from its SVG. */
async function readCharts(page: Page): Promise<ChartState[]> {
  return Promise.all(
    CHART_IDS.map(async (id) => {
      const figure = page.locator(`#${id}`);
      const paths = await figure.locator('path.line').all();
      const lines = await Promise.all(
        paths.map(async (p) =>
          [...((await p.getAttribute('d')) ?? '').matchAll(/[ML](-?[\d.]+) (-?[\d.]+)/g)].map(
            (m) => [Number(m[1]), Number(m[2])] as [number, number],
          ),
        ),
      );
      return {
        id,
        caption: (await figure.locator('figcaption').textContent()) ?? '',
        lines,
        legend: (await figure.locator('ul.series').textContent()) ?? '',
        timeTicks: (await figure.locator('text.tick').allTextContents()).filter((t) =>
          /^\d\d:\d\d$/.test(t),
        ),
      };
    }),
  );
}

const DRAWS = 'the dashboard draws the last minutes of a running cluster';

describe.skipIf(skippedWithout('chromium', HAS_CHROMIUM, DRAWS))(DRAWS, () => {
  let cluster: Cluster;
  let gateways: RoleProcess[];
  let cores: RoleProcess[];
  let simulate: BubbleProcess | undefined;
  let browser: Browser | undefined;

  beforeAll(async () => {
    await buildOnce();
    // Sweeps every second, as by default: the history reads every core's report twice a tick.
    cluster = await Cluster.start({ label: 'dashboard', tickMs: 1000, leaseMs: 3000 });
    await cluster.spawn('server');
    cores = [await cluster.spawn('core'), await cluster.spawn('core')];
    gateways = [await cluster.spawn('gateway'), await cluster.spawn('gateway')];
    simulate = new BubbleProcess({
      args: [
        'simulate',
        '--url',
        gateways[0]!.url,
        '--users',
        '300',
        '--clients',
        '40',
        '--rate',
        '40',
        '--duration',
        '10m',
      ],
      env: { BUBBLE_API_KEY: API_KEY, BUBBLE_JWT_SECRET: JWT_SECRET },
    });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    if (simulate?.alive) {
      simulate.signal('SIGINT');
      await simulate.waitExit(10_000).catch(() => simulate!.kill());
    }
    await cluster?.close();
  });

  it('GET /v1/cluster/history needs the platform key and answers the samples after `since`', async () => {
    const url = `${gateways[1]!.url}/v1/cluster/history`;
    expect((await fetch(url)).status).toBe(401);
    expect((await fetch(url, { headers: { 'x-api-key': 'x'.repeat(40) } })).status).toBe(401);
    const bad = await fetch(`${url}?since=yesterday`, { headers: { 'x-api-key': API_KEY } });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { message: string } }).error.message).toContain('since');
    type History = { intervalMs: number; capacity: number; samples: Array<{ at: number }> };
    const read = async (query = '') => {
      const res = await fetch(url + query, { headers: { 'x-api-key': API_KEY } });
      expect(res.status).toBe(200);
      expect(res.headers.get('cache-control')).toBe('no-store');
      return (await res.json()) as History;
    };
    const full = (await waitFor(
      async () => {
        const h = await read();
        return h.samples.length >= 2 ? h : null;
      },
      { timeoutMs: 30_000, intervalMs: 500, message: 'the gateway took no two samples' },
    ))!;
    expect(full).toMatchObject({ intervalMs: 5000, capacity: 180 });
    const first = full.samples[0]!.at;
    const after = await read(`?since=${first}`);
    expect(after.samples.length).toBeGreaterThanOrEqual(full.samples.length - 1);
    expect(after.samples.every((s) => s.at > first)).toBe(true);
  });

  it(
    'charts every figure with a time axis, moving under bubble simulate, offline',
    async () => {
      const page = await browser!.newPage({ viewport: { width: 1280, height: 900 } });
      const { problems, requests } = watchPage(page);
      const origin = gateways[0]!.url;
      await page.goto(`${origin}/dashboard`);
      await page.locator('#api-key').fill(API_KEY);
      await page.getByRole('button', { name: 'Show cluster' }).click();

      const nodes = (await (
        await fetch(`${origin}/v1/cluster`, { headers: { 'x-api-key': API_KEY } })
      ).json()) as { nodes: Array<{ id: string; role: string }> };
      const idsOf = (role: string) => nodes.nodes.filter((n) => n.role === role).map((n) => n.id);
      const [coreIds, gatewayIds] = [idsOf('core'), idsOf('gateway')];
      expect([coreIds.length, gatewayIds.length]).toEqual([cores.length, gateways.length]);
      // `bubble simulate` holds its sockets on the first gateway from before the first sample, so
      // its line may be flat: once the history has samples of the second gateway at 0, sockets
      // opened there make the connections chart move for certain.
      await waitFor(
        async () => {
          const res = await fetch(`${origin}/v1/cluster/history`, {
            headers: { 'x-api-key': API_KEY },
          });
          return ((await res.json()) as { samples: unknown[] }).samples.length >= 2;
        },
        { timeoutMs: 30_000, intervalMs: 500, message: 'the gateway took no two samples' },
      );
      const sockets = await Promise.all(
        ['dash-a', 'dash-b', 'dash-c'].map(async (user) => {
          const ws = new WebSocket(`${gateways[1]!.url.replace(/^http/, 'ws')}/v1/ws`, {
            headers: { authorization: `Bearer ${await cluster.token(user)}` },
          });
          await new Promise<void>((resolve, reject) => {
            ws.once('message', () => resolve());
            ws.once('error', reject);
          });
          return ws;
        }),
      );
      const charts = await waitFor(
        async () => {
          const state = await readCharts(page);
          const byId = new Map(state.map((c) => [c.id, c]));
          const points = (id: string) => Math.max(0, ...byId.get(id)!.lines.map((l) => l.length));
          const moved = (id: string) =>
            byId.get(id)!.lines.some((l) => new Set(l.map(([, y]) => y)).size > 1);
          const ready =
            state.every((c) => c.lines.length > 0 && points(c.id) >= 3) &&
            moved('chart-changed') &&
            moved('chart-connections') &&
            coreIds.every((id) => byId.get('chart-core-sweep')!.legend.includes(id)) &&
            gatewayIds.every((id) => byId.get('chart-pushes')!.legend.includes(id));
          return ready ? state : null;
        },
        {
          timeoutMs: CHARTS_DEADLINE_MS,
          intervalMs: 1000,
          message: `the charts never filled and moved; simulate said:\n${simulate!.stderr.slice(-4000)}`,
        },
      ).catch(async (err: Error) => {
        await page.screenshot({ path: SCREENSHOT, fullPage: true }).catch(() => {});
        throw new Error(`${err.message}\ncharts: ${JSON.stringify(await readCharts(page))}`);
      });

      for (const chart of charts!) {
        // A visible time axis, labelled with clock times, and the current value in the legend.
        expect(chart.timeTicks.length, chart.id).toBeGreaterThanOrEqual(2);
        expect(chart.legend, chart.id).toMatch(/\d/);
        expect(chart.caption, chart.id).not.toBe('');
      }
      const byId = new Map(charts!.map((c) => [c.id, c]));
      expect(byId.get('chart-core-changed')!.lines).toHaveLength(2);
      expect(byId.get('chart-connections')!.caption).toContain('per gateway');
      expect(byId.get('chart-connections')!.legend).toContain(gatewayIds[1]);
      expect(byId.get('chart-sweep')!.legend).toMatch(/p99.*p50/);

      // Under the pointer, a chart reads out the sample there (time in the caption, values in the
      // legend). It redraws every few seconds, so hover again until one reading is seen whole.
      const chart = page.locator('#chart-changed');
      await waitFor(
        async () => {
          await chart.locator('svg').hover({ position: { x: 200, y: 60 } });
          const caption = (await chart.locator('figcaption').textContent()) ?? '';
          const cursor = await chart.locator('line.cursor').getAttribute('visibility');
          return /· \d\d:\d\d:\d\d$/.test(caption) && cursor === 'visible';
        },
        { timeoutMs: 15_000, intervalMs: 200, message: 'hovering a chart read out nothing' },
      );
      await page.mouse.move(0, 0);

      await page.screenshot({ path: SCREENSHOT, fullPage: true });
      expect(statSync(SCREENSHOT).size).toBeGreaterThan(10_000);

      expect(problems).toEqual([]);
      // Nothing but this origin, the key never in a URL, and only `since` as a query.
      expect(requests.filter((r) => !r.startsWith(`${origin}/`))).toEqual([]);
      expect(requests.filter((r) => r.includes(API_KEY))).toEqual([]);
      expect(
        requests.filter((r) => r.includes('?') && !/\/v1\/cluster\/history\?since=\d+$/.test(r)),
      ).toEqual([]);
      expect(requests.some((r) => r.endsWith('/v1/cluster/history'))).toBe(true);
      expect(requests.some((r) => /\/v1\/cluster\/history\?since=\d+$/.test(r))).toBe(true);
      await page.close();
      for (const ws of sockets) ws.close();
      // The charts' own deadline, the hover's and the screenshot's, with room: the suite's 60 s
      // default is shorter than CHARTS_DEADLINE_MS alone.
    },
    CHARTS_DEADLINE_MS + 60_000,
  );
});
