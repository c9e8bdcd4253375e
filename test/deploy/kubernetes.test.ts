// deploy/kubernetes: every overlay renders with `kubectl kustomize` and passes the Kubernetes and
// Prometheus Operator schemas; the wiring between objects holds (HPA targets, probes, ports,
// Secret keys, grace periods).
import { configSchema, loadConfig, shutdownDeadlineMs } from '@bubble/cli';
import { beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../support/build.js';
import { skippedWithout } from '../support/missing-tools.js';
import {
  OVERLAYS,
  renderOverlay,
  renderOverlayWithMonitoring,
  validateObject,
  type K8sObject,
} from './kustomize.js';
import {
  CONFIG_KEYS,
  ROLES,
  SECRET_KEYS,
  containerEnv,
  containerPort,
  docAnchors,
  kubectl,
  matches,
  named,
  ofKind,
  roleDeployment,
  workloads,
  type Workload,
} from './kubernetes-support.js';

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
