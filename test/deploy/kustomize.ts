/**
 * Renders deploy/kubernetes overlays with `kubectl kustomize` and validates every object against
 * the Kubernetes (kubernetes-models 4.5.1) and Prometheus Operator schemas.
 */
import { execFileSync } from 'node:child_process';
import {
  accessSync,
  constants as fsConstants,
  cpSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { ConfigMap, Secret, Service } from 'kubernetes-models/v1';
import { Deployment, StatefulSet } from 'kubernetes-models/apps/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { Job } from 'kubernetes-models/batch/v1';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import {
  PrometheusRule,
  ServiceMonitor,
} from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';

export const OVERLAYS = ['standalone-redis', 'redis-cluster', 'production'] as const;
export type Overlay = (typeof OVERLAYS)[number];

/** One rendered object, as plain data. */
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string>; [field: string]: unknown };
  [field: string]: unknown;
}

interface Validatable {
  validate(): void;
}

const MODELS: Record<string, new (data: never) => Validatable> = {
  'v1/ConfigMap': ConfigMap,
  'v1/Secret': Secret,
  'v1/Service': Service,
  'apps/v1/Deployment': Deployment,
  'apps/v1/StatefulSet': StatefulSet,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
  'batch/v1/Job': Job,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'monitoring.coreos.com/v1/PrometheusRule': PrometheusRule,
  'monitoring.coreos.com/v1/ServiceMonitor': ServiceMonitor,
};

export function findKubectl(): string | undefined {
  for (const dir of ['/usr/bin', '/usr/local/bin', '/bin']) {
    const candidate = path.join(dir, 'kubectl');
    try {
      accessSync(candidate, fsConstants.X_OK);
      return candidate;
    } catch {
      // keep looking
    }
  }
  return undefined;
}

export function renderOverlay(kubectl: string, root: string, overlay: Overlay): K8sObject[] {
  return render(kubectl, path.join(root, 'deploy/kubernetes/overlays', overlay));
}

/**
 * A trial overlay with its commented-out `components/prometheus-operator` line enabled, as
 * docs/kubernetes.md tells operators to do: rendered from a copy of deploy/kubernetes.
 */
export function renderOverlayWithMonitoring(
  kubectl: string,
  root: string,
  overlay: Overlay,
): K8sObject[] {
  const dir = mkdtempSync(path.join(tmpdir(), 'bubble-kustomize-'));
  try {
    cpSync(path.join(root, 'deploy/kubernetes'), dir, { recursive: true });
    const file = path.join(dir, 'overlays', overlay, 'kustomization.yaml');
    const text = readFileSync(file, 'utf8');
    const line = '# - ../../components/prometheus-operator';
    if (!text.includes(line)) throw new Error(`${overlay} has no line "${line}" to enable`);
    writeFileSync(file, text.replace(line, '- ../../components/prometheus-operator'));
    return render(kubectl, path.join(dir, 'overlays', overlay));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function render(kubectl: string, dir: string): K8sObject[] {
  const overlay = path.relative(path.dirname(path.dirname(dir)), dir);
  const text = execFileSync(kubectl, ['kustomize', dir], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 60_000,
  });
  return parseAllDocuments(text)
    .map((doc) => {
      if (doc.errors.length > 0) throw new Error(`${overlay}: ${doc.errors[0]!.message}`);
      return doc.toJS() as K8sObject | null;
    })
    .filter((obj): obj is K8sObject => obj !== null)
    .map(unwrapSecretData);
}

/**
 * kubectl folds a Secret's long base64 values over several lines; the API server's decoder skips
 * those line breaks, the schema's "byte" format does not.
 */
function unwrapSecretData(obj: K8sObject): K8sObject {
  if (obj.kind !== 'Secret' || !obj.data) return obj;
  const data = Object.fromEntries(
    Object.entries(obj.data as Record<string, string>).map(([k, v]) => [k, v.replace(/\s/g, '')]),
  );
  return { ...obj, data };
}

/** Throws naming the object when the schema of its kind refuses it, or its kind is unknown. */
export function validateObject(obj: K8sObject): void {
  const Model = MODELS[`${obj.apiVersion}/${obj.kind}`];
  const name = `${obj.kind}/${obj.metadata?.name}`;
  if (!Model) throw new Error(`${name}: no schema for ${obj.apiVersion} ${obj.kind}`);
  try {
    new Model(obj as never).validate();
  } catch (err) {
    throw new Error(`${name}: ${(err as Error).message}`);
  }
  checkKnownFields(obj);
}

// The schemas accept fields they do not know (an API server in strict mode would not): the
// fields of the parts written by hand here are checked against the names each schema reads.
const require = createRequire(import.meta.url);
const schemaDir = path.join(path.dirname(require.resolve('kubernetes-models/v1')), '../_schemas');
const fieldCache = new Map<string, Set<string>>();

function schemaFields(schema: string): Set<string> {
  let fields = fieldCache.get(schema);
  if (!fields) {
    const source = readFileSync(path.join(schemaDir, `${schema}.js`), 'utf8');
    fields = new Set(
      [...source.matchAll(/data(?:\.([A-Za-z$_][\w$]*)|\["([^"]+)"\])/g)].map((m) => m[1] ?? m[2]!),
    );
    fieldCache.set(schema, fields);
  }
  return fields;
}

function expectFields(where: string, value: unknown, schema: string): void {
  if (value === undefined) return;
  const known = schemaFields(schema);
  for (const key of Object.keys(value as object))
    if (!known.has(key)) throw new Error(`${where}: unknown field "${key}" (${schema})`);
}

function checkPodSpec(where: string, pod: Record<string, unknown> | undefined): void {
  if (!pod) return;
  expectFields(`${where}.spec`, pod, 'IoK8sApiCoreV1PodSpec');
  expectFields(`${where}.securityContext`, pod.securityContext, 'IoK8sApiCoreV1PodSecurityContext');
  for (const spread of (pod.topologySpreadConstraints ?? []) as object[])
    expectFields(`${where}.topologySpread`, spread, 'IoK8sApiCoreV1TopologySpreadConstraint');
  for (const c of (pod.containers ?? []) as Array<Record<string, unknown>>) {
    const at = `${where}.containers[${String(c.name)}]`;
    expectFields(at, c, 'IoK8sApiCoreV1Container');
    expectFields(`${at}.securityContext`, c.securityContext, 'IoK8sApiCoreV1SecurityContext');
    for (const probe of ['livenessProbe', 'readinessProbe', 'startupProbe'])
      expectFields(`${at}.${probe}`, c[probe], 'IoK8sApiCoreV1Probe');
  }
}

function checkKnownFields(obj: K8sObject): void {
  const name = `${obj.kind}/${obj.metadata.name}`;
  const spec = obj.spec as Record<string, unknown> | undefined;
  const template = spec?.template as { spec?: Record<string, unknown> } | undefined;
  switch (obj.kind) {
    case 'Deployment':
      expectFields(name, spec, 'IoK8sApiAppsV1DeploymentSpec');
      checkPodSpec(name, template?.spec);
      break;
    case 'StatefulSet':
      expectFields(name, spec, 'IoK8sApiAppsV1StatefulSetSpec');
      checkPodSpec(name, template?.spec);
      break;
    case 'Job':
      checkPodSpec(name, template?.spec);
      break;
    case 'HorizontalPodAutoscaler':
      expectFields(name, spec, 'IoK8sApiAutoscalingV2HorizontalPodAutoscalerSpec');
      break;
    case 'Service':
      expectFields(name, spec, 'IoK8sApiCoreV1ServiceSpec');
      break;
  }
}
