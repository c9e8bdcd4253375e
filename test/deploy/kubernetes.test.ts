// deploy/kubernetes: every overlay renders with `kubectl kustomize` and passes the Kubernetes and
// Prometheus Operator schemas; the wiring between objects holds (HPA targets, probes, ports,
// Secret keys, grace periods); and every metric the alerts and the Grafana dashboard name is
// served by /metrics of real `bubble server|core|gateway` processes.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { configSchema, loadConfig, shutdownDeadlineMs } from '@bubble/cli';
import {
  freePort,
  startRedisServer,
  waitFor,
  type RedisServerHandle,
  type RoleProcess,
} from '@bubble/test-utils';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from '../cluster/harness.js';
import { buildOnce, ROOT } from '../support/build.js';
import { skippedWithout } from '../support/missing-tools.js';
import {
  OVERLAYS,
  findKubectl,
  renderOverlay,
  renderOverlayWithMonitoring,
  validateObject,
  type K8sObject,
} from './kustomize.js';

const run = promisify(execFile);
const kubectl = findKubectl();
if (!kubectl) console.warn('kubectl is not installed: the Kubernetes manifest tests are skipped');

const ROLES = ['server', 'core', 'gateway'] as const;
const CONFIG_KEYS = new Set(Object.keys(configSchema.shape));
const SECRET_KEYS = ['BUBBLE_API_KEY', 'BUBBLE_JWT_SECRET'];

interface Container {
  name: string;
  args?: string[];
  env?: Array<{ name: string; value?: string }>;
  envFrom?: Array<{ configMapRef?: { name: string }; secretRef?: { name: string } }>;
  ports?: Array<{ name?: string; containerPort: number }>;
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  startupProbe?: Probe;
  lifecycle?: { preStop?: { exec?: { command: string[] } } };
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: {
    runAsNonRoot?: boolean;
    readOnlyRootFilesystem?: boolean;
    allowPrivilegeEscalation?: boolean;
    capabilities?: { drop?: string[] };
  };
}
interface Probe {
  httpGet?: { path: string; port: string | number };
  exec?: { command: string[] };
  tcpSocket?: { port: string | number };
}
interface PodTemplate {
  metadata: { labels: Record<string, string> };
  spec: {
    containers: Container[];
    terminationGracePeriodSeconds?: number;
    securityContext?: { runAsNonRoot?: boolean };
  };
}
type Workload = K8sObject & {
  spec: { selector: { matchLabels: Record<string, string> }; template: PodTemplate };
};

const ofKind = <T extends K8sObject = K8sObject>(objects: K8sObject[], kind: string) =>
  objects.filter((o) => o.kind === kind) as T[];

function named<T extends K8sObject>(objects: K8sObject[], kind: string, name: string): T {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (!found) throw new Error(`no ${kind}/${name} rendered`);
  return found as T;
}

const workloads = (objects: K8sObject[]) =>
  objects.filter((o) => ['Deployment', 'StatefulSet', 'Job'].includes(o.kind)) as Workload[];

const roleDeployment = (objects: K8sObject[], role: string) =>
  named<Workload>(objects, 'Deployment', `bubble-${role}`);

function matches(selector: Record<string, string>, labels: Record<string, string>): boolean {
  return Object.entries(selector).every(([key, value]) => labels[key] === value);
}

/** The environment a container gets from its ConfigMaps, Secrets and env entries. */
function containerEnv(objects: K8sObject[], container: Container): Record<string, string> {
  const env: Record<string, string> = {};
  for (const source of container.envFrom ?? []) {
    if (source.configMapRef) {
      const map = objects.find(
        (o) => o.kind === 'ConfigMap' && o.metadata.name === source.configMapRef!.name,
      ) as (K8sObject & { data: Record<string, string> }) | undefined;
      if (!map) throw new Error(`ConfigMap ${source.configMapRef.name} is not rendered`);
      Object.assign(env, map.data);
    }
    if (source.secretRef) {
      const secret = objects.find(
        (o) => o.kind === 'Secret' && o.metadata.name === source.secretRef!.name,
      ) as (K8sObject & { data: Record<string, string> }) | undefined;
      // The production overlay expects the operator's Secret; it is not rendered.
      for (const [key, value] of Object.entries(secret?.data ?? {}))
        env[key] = Buffer.from(value, 'base64').toString('utf8');
    }
  }
  for (const entry of container.env ?? [])
    if (entry.value !== undefined) env[entry.name] = entry.value;
  return env;
}

function containerPort(container: Container, port: string | number): number {
  if (typeof port === 'number') return port;
  const found = container.ports?.find((p) => p.name === port);
  if (!found) throw new Error(`container ${container.name} has no port named ${port}`);
  return found.containerPort;
}

/** The metric names an expression reads, without a histogram's series suffixes. */
function metricNames(expression: string): string[] {
  return [...expression.matchAll(/\bbubble_[a-z0-9_]+/g)].map((m) =>
    m[0].replace(/_(bucket|sum|count)$/, ''),
  );
}

/** The anchors GitHub gives docs/kubernetes.md's headings. */
function docAnchors(): Set<string> {
  const text = readFileSync(path.join(ROOT, 'docs/kubernetes.md'), 'utf8');
  return new Set(
    [...text.matchAll(/^#{1,6}\s+(.+)$/gm)].map((m) =>
      m[1]!
        .trim()
        .toLowerCase()
        .replace(/[^\w\- ]/g, '')
        .replace(/ /g, '-'),
    ),
  );
}

describe.skipIf(skippedWithout('kubectl', kubectl, 'the Kustomize overlays')).each(OVERLAYS)(
  'deploy/kubernetes/overlays/%s',
  (overlay) => {
    let objects: K8sObject[];

    beforeAll(() => {
      objects = renderOverlay(kubectl!, ROOT, overlay);
    });

    it('renders, and every object passes the schema of its kind', () => {
      expect(objects.length).toBeGreaterThan(10);
      for (const obj of objects) validateObject(obj);
      const ids = objects.map((o) => `${o.kind}/${o.metadata.name}`);
      expect(new Set(ids).size).toBe(ids.length);
    });

    it('labels every object as bubble, and each workload selects its own pods', () => {
      for (const obj of objects) {
        expect(obj.metadata.labels?.['app.kubernetes.io/name'], obj.metadata.name).toBe('bubble');
        expect(obj.metadata.labels?.['app.kubernetes.io/part-of'], obj.metadata.name).toBe(
          'bubble',
        );
      }
      for (const workload of workloads(objects)) {
        const labels = workload.spec.template.metadata.labels;
        expect(labels['app.kubernetes.io/component'], workload.metadata.name).toBeTruthy();
        expect(labels['app.kubernetes.io/version']).toBe('0.1.0');
        if (workload.kind !== 'Job')
          expect(matches(workload.spec.selector.matchLabels, labels), workload.metadata.name).toBe(
            true,
          );
      }
      for (const role of ROLES) {
        const deployment = roleDeployment(objects, role);
        const [container] = deployment.spec.template.spec.containers;
        expect(container!.args).toEqual([role]);
        expect((container as unknown as { image: string }).image).toBe(
          'ghcr.io/bubble/bubble:0.1.0',
        );
      }
      expect(roleDeployment(objects, 'server').spec).toMatchObject({
        replicas: overlay === 'production' ? 3 : 2,
      });
    });

    it('scales the core and the gateway Deployments by CPU, in slowly, within a disruption budget', () => {
      for (const role of ['core', 'gateway']) {
        const hpa = ofKind(objects, 'HorizontalPodAutoscaler').find(
          (h) =>
            (h.spec as { scaleTargetRef: { name: string } }).scaleTargetRef.name ===
            `bubble-${role}`,
        ) as (K8sObject & { spec: Record<string, never> }) | undefined;
        expect(hpa, `an HPA for bubble-${role}`).toBeDefined();
        const spec = hpa!.spec as unknown as {
          scaleTargetRef: { apiVersion: string; kind: string; name: string };
          minReplicas: number;
          maxReplicas: number;
          metrics: Array<{ resource?: { name: string } }>;
          behavior: {
            scaleDown: {
              stabilizationWindowSeconds: number;
              policies: Array<{ type: string; value: number }>;
            };
          };
        };
        expect(spec.scaleTargetRef).toEqual({
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          name: `bubble-${role}`,
        });
        // The target really is that role's Deployment.
        expect(roleDeployment(objects, role).spec.template.spec.containers[0]!.args).toEqual([
          role,
        ]);
        expect(spec.minReplicas).toBeGreaterThanOrEqual(2);
        expect(spec.maxReplicas).toBeGreaterThan(spec.minReplicas);
        expect(spec.metrics.map((m) => m.resource?.name)).toEqual(['cpu']);
        expect(spec.behavior.scaleDown.stabilizationWindowSeconds).toBeGreaterThanOrEqual(300);
        expect(spec.behavior.scaleDown.policies).toEqual([
          expect.objectContaining({ type: 'Pods', value: 1 }),
        ]);
        // Left to the HPA: a re-apply must not reset the replica count.
        expect(roleDeployment(objects, role).spec).not.toHaveProperty('replicas');
        const labels = roleDeployment(objects, role).spec.template.metadata.labels;
        const budgets = ofKind(objects, 'PodDisruptionBudget').filter((p) =>
          matches((p.spec as Workload['spec']).selector.matchLabels, labels),
        );
        expect(budgets.map((b) => b.metadata.name)).toEqual([`bubble-${role}`]);
      }
    });

    it('probes real paths on the ports the roles listen on, as the environment configures them', () => {
      for (const role of ROLES) {
        const [container] = roleDeployment(objects, role).spec.template.spec.containers;
        const env = containerEnv(objects, container!);
        // What the role would parse at start (the production Secret is the operator's).
        const config = loadConfig({
          ...(overlay === 'production'
            ? {
                REDIS_URL: 'redis://redis.example:6379',
                BUBBLE_API_KEY: 'k'.repeat(40),
                BUBBLE_JWT_SECRET: 's'.repeat(40),
              }
            : {}),
          ...env,
        });
        expect(config.BUBBLE_INTERNAL_PORT).toBeDefined();
        expect(containerPort(container!, 'internal')).toBe(config.BUBBLE_INTERNAL_PORT);
        if (role === 'gateway') expect(containerPort(container!, 'http')).toBe(config.PORT);
        else expect(container!.ports!.map((p) => p.name)).toEqual(['internal']);
        expect(container!.livenessProbe?.httpGet).toEqual({ path: '/healthz', port: 'internal' });
        expect(container!.startupProbe?.httpGet).toEqual({ path: '/healthz', port: 'internal' });
        expect(container!.readinessProbe?.httpGet).toEqual({ path: '/readyz', port: 'internal' });
      }
    });

    it('routes every Service to a named port of the pods it selects', () => {
      for (const service of ofKind(objects, 'Service')) {
        const spec = service.spec as {
          selector: Record<string, string>;
          ports: Array<{ name: string; port: number; targetPort: string | number }>;
        };
        const selected = workloads(objects).filter((w) =>
          matches(spec.selector, w.spec.template.metadata.labels),
        );
        expect(selected.length, `pods behind Service ${service.metadata.name}`).toBeGreaterThan(0);
        for (const workload of selected)
          for (const port of spec.ports)
            expect(() =>
              containerPort(workload.spec.template.spec.containers[0]!, port.targetPort),
            ).not.toThrow();
      }
      if (!objects.some((o) => o.kind === 'ServiceMonitor')) return;
      const monitor = named<
        K8sObject & {
          spec: {
            selector: { matchLabels: Record<string, string> };
            endpoints: Array<{ port: string; path: string }>;
          };
        }
      >(objects, 'ServiceMonitor', 'bubble');
      expect(monitor.spec.endpoints).toEqual([
        expect.objectContaining({ port: 'internal', path: '/metrics' }),
      ]);
      const scraped = ofKind(objects, 'Service').filter((s) =>
        matches(monitor.spec.selector.matchLabels, s.metadata.labels ?? {}),
      );
      expect(
        scraped
          .map(
            (s) =>
              (s.spec as { selector: Record<string, string> }).selector[
                'app.kubernetes.io/component'
              ],
          )
          .sort(),
      ).toEqual(['core', 'gateway', 'server']);
    });

    it('hands the roles only variables they read, and secrets of at least 32 bytes', () => {
      for (const map of ofKind<K8sObject & { data: Record<string, string> }>(objects, 'ConfigMap'))
        if (map.metadata.name.startsWith('bubble-config-'))
          for (const key of Object.keys(map.data))
            expect(CONFIG_KEYS, `ConfigMap key ${key}`).toContain(key);
      const secrets = ofKind<K8sObject & { data: Record<string, string> }>(objects, 'Secret');
      for (const role of ROLES) {
        const [container] = roleDeployment(objects, role).spec.template.spec.containers;
        const refs = container!.envFrom!.flatMap((s) => (s.secretRef ? [s.secretRef.name] : []));
        expect(refs).toHaveLength(1);
        if (overlay === 'production') expect(refs).toEqual(['bubble-secrets']);
        else expect(secrets.map((s) => s.metadata.name)).toContain(refs[0]);
      }
      if (overlay === 'production') {
        expect(secrets).toEqual([]);
        return;
      }
      expect(secrets).toHaveLength(1);
      const data = secrets[0]!.data;
      expect(Object.keys(data).sort()).toEqual(SECRET_KEYS);
      for (const key of Object.keys(data)) {
        expect(CONFIG_KEYS).toContain(key);
        expect(Buffer.from(data[key]!, 'base64').length, key).toBeGreaterThanOrEqual(32);
      }
    });

    it('gives each role longer than its preStop and the SIGTERM drain to stop', () => {
      for (const role of ROLES) {
        const pod = roleDeployment(objects, role).spec.template.spec;
        // The role's own deadline, as its environment configures it (a gateway's paced drain).
        const env = containerEnv(objects, pod.containers[0]!);
        const drainMaxMs = configSchema.shape.BUBBLE_WS_DRAIN_MAX_MS.parse(
          env.BUBBLE_WS_DRAIN_MAX_MS,
        );
        const deadlineMs = shutdownDeadlineMs(role, { BUBBLE_WS_DRAIN_MAX_MS: drainMaxMs });
        expect(deadlineMs).toBeGreaterThan(0);
        const command = pod.containers[0]!.lifecycle?.preStop?.exec?.command ?? [];
        expect(command[0], `${role} preStop`).toBe('sleep');
        const preStopS = Number(command[1]);
        expect(preStopS).toBeGreaterThan(0);
        expect(pod.terminationGracePeriodSeconds!, role).toBeGreaterThan(
          preStopS + deadlineMs / 1000,
        );
      }
    });

    it('runs every container as non-root on a read-only root, without capabilities, within limits', () => {
      for (const workload of workloads(objects)) {
        const pod = workload.spec.template.spec;
        for (const container of pod.containers) {
          const where = `${workload.metadata.name}/${container.name}`;
          expect(
            container.securityContext?.runAsNonRoot ?? pod.securityContext?.runAsNonRoot,
            where,
          ).toBe(true);
          expect(container.securityContext?.readOnlyRootFilesystem, where).toBe(true);
          expect(container.securityContext?.allowPrivilegeEscalation, where).toBe(false);
          expect(container.securityContext?.capabilities?.drop, where).toEqual(['ALL']);
          for (const kind of ['requests', 'limits'] as const) {
            expect(container.resources?.[kind]?.cpu, `${where} ${kind}.cpu`).toBeTruthy();
            expect(container.resources?.[kind]?.memory, `${where} ${kind}.memory`).toBeTruthy();
          }
        }
      }
    });

    it('runs the in-cluster Redis stores with AOF every second and no eviction', () => {
      const stores = ofKind<Workload>(objects, 'StatefulSet').filter((s) =>
        ['redis', 'redis-cluster'].includes(
          s.spec.template.metadata.labels['app.kubernetes.io/component']!,
        ),
      );
      if (overlay === 'production') {
        expect(stores).toEqual([]);
        return;
      }
      expect(stores).toHaveLength(1);
      const args = stores[0]!.spec.template.spec.containers[0]!.args!.join(' ');
      expect(args).toContain('--appendonly yes');
      expect(args).toContain('--appendfsync everysec');
      expect(args).toContain('--maxmemory-policy noeviction');
      const locks = named<Workload>(objects, 'StatefulSet', 'bubble-redis-lock');
      expect((locks.spec as unknown as { replicas: number }).replicas).toBe(3);
    });

    it('scrapes and alerts through the Prometheus Operator in production, and on a trial overlay when added', () => {
      const monitoring = (list: K8sObject[]) =>
        list.filter((o) => o.apiVersion.startsWith('monitoring.coreos.com/')).map((o) => o.kind);
      if (overlay === 'production') {
        expect(monitoring(objects).sort()).toEqual(['PrometheusRule', 'ServiceMonitor']);
        return;
      }
      // A cluster without the operator's CRDs would refuse these kinds.
      expect(monitoring(objects)).toEqual([]);
      const added = renderOverlayWithMonitoring(kubectl!, ROOT, overlay);
      expect(monitoring(added).sort()).toEqual(['PrometheusRule', 'ServiceMonitor']);
      for (const obj of added) validateObject(obj);
    });

    it('gives every alert a for: and a runbook that docs/kubernetes.md has', () => {
      const anchors = docAnchors();
      if (overlay !== 'production') objects = renderOverlayWithMonitoring(kubectl!, ROOT, overlay);
      const rule = named<
        K8sObject & { spec: { groups: Array<{ rules: Array<Record<string, never>> }> } }
      >(objects, 'PrometheusRule', 'bubble');
      const rules = rule.spec.groups.flatMap((g) => g.rules) as unknown as Array<{
        alert: string;
        for: string;
        annotations: { runbook_url: string; summary: string };
      }>;
      expect(rules.length).toBeGreaterThanOrEqual(7);
      for (const alert of rules) {
        expect(alert.for, alert.alert).toMatch(/^\d+[smh]$/);
        expect(alert.annotations.summary, alert.alert).toBeTruthy();
        const anchor = alert.annotations.runbook_url.split('#')[1];
        expect(anchor).toBe(alert.alert.toLowerCase());
        expect(anchors, `docs/kubernetes.md heading for ${alert.alert}`).toContain(anchor);
      }
    });
  },
);

describe('deploy/kubernetes/overlays/redis-cluster/create-cluster.sh', () => {
  const servers: RedisServerHandle[] = [];
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
  });

  it('joins three cluster-enabled nodes into one cluster, and leaves a formed cluster alone', async () => {
    servers.push(...(await Promise.all([0, 1, 2].map(() => startRedisServer({ cluster: true })))));
    const script = path.join(ROOT, 'deploy/kubernetes/overlays/redis-cluster/create-cluster.sh');
    const env = {
      PATH: process.env.PATH,
      REDIS_NODES: servers.map((s) => `127.0.0.1:${s.port}`).join(' '),
      CREATE_DEADLINE_S: '30',
    };
    const first = await run('sh', [script], { env, timeout: 60_000 });
    expect(first.stdout).toContain('cluster created');
    for (const server of servers) {
      const client = new Redis(server.url);
      try {
        const info = (await client.call('CLUSTER', 'INFO')) as string;
        expect(info).toContain('cluster_state:ok');
        expect(info).toContain('cluster_known_nodes:3');
      } finally {
        client.disconnect();
      }
    }
    const again = await run('sh', [script], { env, timeout: 60_000 });
    expect(again.stdout).toContain('nothing to do');
  });
});

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
  const pools = 8;

  beforeAll(async () => {
    await buildOnce();
    // The store the roles use, separate from the harness's, so this test can stop it.
    store = await startRedisServer();
    cluster = await Cluster.start({ label: 'k8s-metrics', pools });
  }, 300_000);

  afterAll(async () => {
    await cluster?.close();
    await store?.stop();
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
    core = await cluster.spawn('core', { REDIS_URL: store.url });
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
