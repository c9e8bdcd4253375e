// deploy/kubernetes: every metric the alerts and the Grafana dashboard name is served by /metrics
// of real `bubble server|core|gateway` processes.
import {
  freePort,
  startRedisServer,
  startSourcesEndpoint,
  waitFor,
  type RedisServerHandle,
  type RoleProcess,
  type SourcesEndpoint,
} from '@bubble/test-utils';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from '../cluster/harness.js';
import { buildOnce, ROOT } from '../support/build.js';
import { skippedWithout } from '../support/missing-tools.js';
import { renderOverlay, type K8sObject } from './kustomize.js';
import { kubectl, metricNames, named } from './kubernetes-support.js';

/** The value of an unlabelled gauge on a /metrics page, or undefined. */
function gaugeValue(page: string, name: string): number | undefined {
  const line = page.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

async function scrape(url: string): Promise<string> {
  const res = await fetch(`${url}/metrics`);
  expect(res.status).toBe(200);
  return res.text();
}

const NAMED_METRICS = 'the metrics the alerts and the dashboard name, on running roles';

describe.skipIf(skippedWithout('kubectl', kubectl, NAMED_METRICS))(NAMED_METRICS, () => {
  let cluster: Cluster;
  let store: RedisServerHandle;
  let server: RoleProcess;
  let core: RoleProcess | undefined;
  let gatewayInternal: string;
  // The sources client and its metrics exist in a role only with BUBBLE_SOURCES_URL set.
  let sources: SourcesEndpoint;
  let sourcesEnv: Record<string, string>;
  const pools = 8;

  beforeAll(async () => {
    await buildOnce();
    // The store the roles use, separate from the harness's, so this test can stop it.
    store = await startRedisServer();
    cluster = await Cluster.start({ label: 'k8s-metrics', pools });
    const secret = 'k8s-metrics-sources-secret-5d1e9a7c3b2f4e60';
    sources = await startSourcesEndpoint({ secret, graph: new Map() });
    sourcesEnv = { BUBBLE_SOURCES_URL: sources.url, BUBBLE_SOURCES_SECRET: secret };
  }, 300_000);

  afterAll(async () => {
    await cluster?.close();
    await store?.stop();
    await sources?.close();
  });

  it('bubble_pools_unowned counts the pools no core holds, on the leader, until a core owns them', async () => {
    server = await cluster.spawn('server', { REDIS_URL: store.url });
    await waitFor(
      async () => {
        const page = await scrape(server.url);
        return (
          gaugeValue(page, 'bubble_server_leading') === 1 &&
          gaugeValue(page, 'bubble_pools_unowned') === pools
        );
      },
      { timeoutMs: 15_000, message: 'the lone server never led with every pool unowned' },
    );
    core = await cluster.spawn('core', { REDIS_URL: store.url, ...sourcesEnv });
    await waitFor(
      async () =>
        gaugeValue(await scrape(server.url), 'bubble_pools_unowned') === 0 &&
        gaugeValue(await scrape(core!.url), 'bubble_core_pools_owned') === pools,
      { timeoutMs: 20_000, message: 'the core never owned every pool' },
    );
  });

  it('serves every metric the PrometheusRule and the Grafana dashboard name', async () => {
    const objects = renderOverlay(kubectl!, ROOT, 'production');
    const rule = named<K8sObject & { spec: { groups: Array<{ rules: Array<{ expr: string }> }> } }>(
      objects,
      'PrometheusRule',
      'bubble',
    );
    const dashboardMap = named<K8sObject & { data: Record<string, string> }>(
      objects,
      'ConfigMap',
      'bubble-grafana-dashboard',
    );
    expect(dashboardMap.metadata.labels?.grafana_dashboard).toBe('1');
    const dashboard = JSON.parse(dashboardMap.data['bubble.json']!) as {
      panels: Array<{ targets?: Array<{ expr: string }> }>;
      templating: { list: Array<{ query?: unknown }> };
    };
    const expressions = [
      ...rule.spec.groups.flatMap((g) => g.rules.map((r) => r.expr)),
      ...dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr)),
      ...dashboard.templating.list.map((v) => JSON.stringify(v.query ?? '')),
    ];
    const named_ = new Set(expressions.flatMap(metricNames));
    expect(named_.size).toBeGreaterThan(15);

    const internalPort = await freePort();
    const gateway = await cluster.spawn('gateway', {
      REDIS_URL: store.url,
      ...sourcesEnv,
      BUBBLE_INTERNAL_PORT: String(internalPort),
    });
    gatewayInternal = `http://127.0.0.1:${internalPort}`;
    // What the probes of deploy/kubernetes ask for, on the internal port, and not on the public one.
    expect((await fetch(`${gatewayInternal}/healthz`)).status).toBe(200);
    await waitFor(async () => (await fetch(`${gatewayInternal}/readyz`)).status === 200, {
      timeoutMs: 10_000,
      message: 'the gateway never became ready on its internal port',
    });
    expect((await fetch(`${gateway.url}/metrics`)).status).toBe(404);

    const pages = await Promise.all([
      scrape(server.url),
      scrape(core!.url),
      scrape(gatewayInternal),
    ]);
    const exported = new Set(
      pages.flatMap((page) => [...page.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!)),
    );
    const missing = [...named_].filter((name) => !exported.has(name));
    expect(missing, 'metrics named by the alerts or the dashboard that no role exports').toEqual(
      [],
    );
    expect(gaugeValue(pages[2]!, 'bubble_ws_connections_max')).toBe(100_000);
    expect(gaugeValue(pages[2]!, 'bubble_ws_connections')).toBe(0);
  });

  it('bubble_redis_up reads 1 on every role, and 0 once Redis is gone', async () => {
    const urls = [server.url, core!.url, gatewayInternal];
    for (const url of urls) expect(gaugeValue(await scrape(url), 'bubble_redis_up'), url).toBe(1);
    await store.stop();
    await waitFor(
      async () => {
        const values = await Promise.all(
          urls.map(async (u) => gaugeValue(await scrape(u), 'bubble_redis_up')),
        );
        return values.every((v) => v === 0);
      },
      { timeoutMs: 20_000, message: 'bubble_redis_up never read 0 with Redis stopped' },
    );
  });
});
