/**
 * What the sources client's tests share: a real sources endpoint (test-utils) per test, clients
 * with short times closed after each test, a log that keeps its lines, and a clock a test can
 * move forward (the breaker's pause) without waiting.
 */
import { SourcesClient, type SourcesClientOptions, type SourcesLog } from '@bubble/events';
import {
  startSourcesEndpoint,
  type SourcesEndpoint,
  type SourcesEndpointOptions,
} from '@bubble/test-utils';
import { Registry } from 'prom-client';
import { afterEach } from 'vitest';

export const SECRET = 'sources-test-secret-4b8e1f2a9c7d3e6f5a0b';
export const CAPS = { follows: 50, topics: 20 };

export interface LogLine {
  level: 'debug' | 'info' | 'warn' | 'error';
  msg: string;
  [key: string]: unknown;
}

export interface Rig {
  endpoint: SourcesEndpoint;
  client: SourcesClient;
  registry: Registry;
  lines: LogLine[];
  /** Moves the client's clock forward (deadlines, the breaker's pause, the signature's t). */
  skip(ms: number): void;
}

const opened: { close(): Promise<void> }[] = [];

afterEach(async () => {
  const open = opened.splice(0);
  for (const thing of open.reverse()) await thing.close();
});

export async function startEndpoint(
  options: Partial<SourcesEndpointOptions> = {},
): Promise<SourcesEndpoint> {
  const endpoint = await startSourcesEndpoint({ secret: SECRET, ...options });
  opened.push(endpoint);
  return endpoint;
}

export function startClient(
  endpoint: SourcesEndpoint,
  options: Partial<SourcesClientOptions> = {},
): Omit<Rig, 'endpoint'> {
  const registry = new Registry();
  const lines: LogLine[] = [];
  const at =
    (level: LogLine['level']) =>
    (obj: object, msg: string): void => {
      lines.push({ ...obj, level, msg });
    };
  const log: SourcesLog = {
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
  };
  let skew = 0;
  const client = new SourcesClient({
    url: endpoint.url,
    secret: SECRET,
    caps: CAPS,
    timeoutMs: 2_000,
    retryBaseMs: 10,
    retryMaxMs: 40,
    registry,
    log,
    clock: () => Date.now() + skew,
    ...options,
  });
  opened.push(client);
  return { client, registry, lines, skip: (ms) => (skew += ms) };
}

export async function startRig(
  endpointOptions: Partial<SourcesEndpointOptions> = {},
  clientOptions: Partial<SourcesClientOptions> = {},
): Promise<Rig> {
  const endpoint = await startEndpoint(endpointOptions);
  return { endpoint, ...startClient(endpoint, clientOptions) };
}

/** `count` users named `<prefix>0…`, each following two authors and one topic in `graph`. */
export function addUsers(endpoint: SourcesEndpoint, prefix: string, count: number): string[] {
  const users = Array.from({ length: count }, (_, i) => `${prefix}${i}`);
  for (const user of users)
    endpoint.graph.set(user, { follows: [`${user}.a`, `${user}.b`], topics: [`${user}.t`] });
  return users;
}

/** A metric's value in the registry's text exposition (0 when absent). */
export async function metricValue(registry: Registry, series: string): Promise<number> {
  const text = await registry.metrics();
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}
