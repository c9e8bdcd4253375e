import type { HistoryResponse } from '../history-wire.js';
import type { ClusterStatus } from '@bubble/protocol';
import { parseMetrics, type Samples } from './prometheus-text.js';

export class Unauthorized extends Error {}

const SAME_ORIGIN: RequestInit = { cache: 'no-store', credentials: 'omit', redirect: 'error' };

/** GET a JSON route behind the platform key (sent as a header only, never in the URL). */
async function getWithKey(path: string, key: string): Promise<unknown> {
  const res = await fetch(path, {
    ...SAME_ORIGIN,
    headers: { 'x-api-key': key, accept: 'application/json' },
  });
  if (res.status === 401) throw new Unauthorized('The gateway refused this API key.');
  const body: unknown = await res.json().catch(() => null);
  if (!res.ok) {
    const message = (body as { error?: { message?: unknown } } | null)?.error?.message;
    throw new Error(typeof message === 'string' ? message : `HTTP ${res.status}`);
  }
  return body;
}

export async function loadCluster(key: string): Promise<ClusterStatus> {
  const body = (await getWithKey('/v1/cluster', key)) as Partial<ClusterStatus> | null;
  if (
    !body ||
    !Array.isArray(body.pools) ||
    !Array.isArray(body.nodes) ||
    !Array.isArray(body.sweeps)
  ) {
    throw new Error('GET /v1/cluster answered something unexpected');
  }
  return body as ClusterStatus;
}

/** The samples after `since` (all of them without it). */
export async function loadHistory(key: string, since: number | null): Promise<HistoryResponse> {
  const path = since === null ? '/v1/cluster/history' : `/v1/cluster/history?since=${since}`;
  const body = (await getWithKey(path, key)) as Partial<HistoryResponse> | null;
  if (!body || !Array.isArray(body.samples) || typeof body.intervalMs !== 'number') {
    throw new Error('GET /v1/cluster/history answered something unexpected');
  }
  return body as HistoryResponse;
}

/** This process's /metrics, or null where this port does not serve them. */
export async function loadMetrics(): Promise<Samples | null> {
  const res = await fetch('/metrics', SAME_ORIGIN);
  if (!res.ok) return null;
  return parseMetrics(await res.text());
}
