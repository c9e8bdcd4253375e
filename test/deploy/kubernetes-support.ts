/**
 * What the deploy/kubernetes test files (kubernetes*.test.ts) share: kubectl (absent: those
 * tests are skipped), and readers of the rendered objects (workloads, containers, their
 * environment and ports, the metrics an expression names, docs/kubernetes.md's anchors).
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { configSchema } from '@bubble/cli';
import { ROOT } from '../support/build.js';
import { findKubectl, type K8sObject } from './kustomize.js';

export const run = promisify(execFile);
export const kubectl = findKubectl();
if (!kubectl) console.warn('kubectl is not installed: the Kubernetes manifest tests are skipped');

export const ROLES = ['server', 'core', 'gateway'] as const;
export const CONFIG_KEYS = new Set(Object.keys(configSchema.shape));
export const SECRET_KEYS = ['BUBBLE_API_KEY', 'BUBBLE_JWT_SECRET'];

export interface Container {
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
export interface Probe {
  httpGet?: { path: string; port: string | number };
  exec?: { command: string[] };
  tcpSocket?: { port: string | number };
}
export interface PodTemplate {
  metadata: { labels: Record<string, string> };
  spec: {
    containers: Container[];
    terminationGracePeriodSeconds?: number;
    securityContext?: { runAsNonRoot?: boolean };
  };
}
export type Workload = K8sObject & {
  spec: { selector: { matchLabels: Record<string, string> }; template: PodTemplate };
};

export const ofKind = <T extends K8sObject = K8sObject>(objects: K8sObject[], kind: string) =>
  objects.filter((o) => o.kind === kind) as T[];

export function named<T extends K8sObject>(objects: K8sObject[], kind: string, name: string): T {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (!found) throw new Error(`no ${kind}/${name} rendered`);
  return found as T;
}

export const workloads = (objects: K8sObject[]) =>
  objects.filter((o) => ['Deployment', 'StatefulSet', 'Job'].includes(o.kind)) as Workload[];

export const roleDeployment = (objects: K8sObject[], role: string) =>
  named<Workload>(objects, 'Deployment', `bubble-${role}`);

export function matches(selector: Record<string, string>, labels: Record<string, string>): boolean {
  return Object.entries(selector).every(([key, value]) => labels[key] === value);
}

/** The environment a container gets from its ConfigMaps, Secrets and env entries. */
export function containerEnv(objects: K8sObject[], container: Container): Record<string, string> {
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

export function containerPort(container: Container, port: string | number): number {
  if (typeof port === 'number') return port;
  const found = container.ports?.find((p) => p.name === port);
  if (!found) throw new Error(`container ${container.name} has no port named ${port}`);
  return found.containerPort;
}

/** The metric names an expression reads, without a histogram's series suffixes. */
export function metricNames(expression: string): string[] {
  return [...expression.matchAll(/\bbubble_[a-z0-9_]+/g)].map((m) =>
    m[0].replace(/_(bucket|sum|count)$/, ''),
  );
}

/** The anchors GitHub gives docs/kubernetes.md's headings. */
export function docAnchors(): Set<string> {
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
