import { BubbleError, type ClusterStatus } from '@bubble/protocol';
import type { Registry } from 'prom-client';
import type { Authenticator } from '../auth.js';
import { sendJson } from '../http/respond.js';
import type { RequestContext, Router } from '../http/router.js';
import { ClusterHistory, type ClusterReads } from './history.js';
import type { HistoryResponse } from './history-wire.js';
import { DASHBOARD_CSP, dashboardPage } from './page.js';

export interface DashboardDeps {
  /** Checks the platform key of GET /v1/cluster and GET /v1/cluster/history. */
  auth: Authenticator;
  clusterStatus: () => Promise<ClusterStatus>;
  /**
   * Also answer GET /v1/cluster (platform key required) on this server: true where the operator
   * routes are served apart from the platform routes (BUBBLE_INTERNAL_PORT), so the page can read
   * the cluster from its own origin.
   */
  serveCluster: boolean;
  /** Where the history's cluster-wide figures are read. */
  cluster: ClusterReads;
  /** This process's metrics, for the history's figures of the serving gateway. */
  registry: Registry;
}

const PAGE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': DASHBOARD_CSP,
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
};

/**
 * GET /dashboard: the operator page (no credentials to load it; it asks for the platform key to
 * read the cluster). Served next to /healthz, /readyz and /metrics by the gateway and `all`, with
 * GET /v1/cluster/history: the last 15 minutes this process sampled. Sampling starts here; the
 * returned function stops it.
 */
export function addDashboardRoutes(router: Router, deps: DashboardDeps): () => void {
  const page = Buffer.from(dashboardPage());
  const servePage = async ({ res }: RequestContext) => {
    res.writeHead(200, { ...PAGE_HEADERS, 'content-length': page.length });
    res.end(page);
  };
  const history = new ClusterHistory({ cluster: deps.cluster, registry: deps.registry });
  router.add('GET', '/dashboard', servePage).add('GET', '/dashboard/', servePage);
  router.add('GET', '/v1/cluster/history', async ({ req, res }) => {
    deps.auth.requirePlatform(req);
    const since = parseSince(new URL(req.url ?? '/', 'http://bubble.invalid').searchParams);
    const body: HistoryResponse = {
      intervalMs: history.intervalMs,
      capacity: history.capacity,
      samples: history.samples(since),
    };
    sendJson(res, 200, body);
  });
  if (deps.serveCluster) {
    router.add('GET', '/v1/cluster', async ({ req, res }) => {
      deps.auth.requirePlatform(req);
      sendJson(res, 200, await deps.clusterStatus());
    });
  }
  history.start();
  return () => history.stop();
}

/** `since`: ms since the epoch, samples after it only; absent: all of them. */
function parseSince(params: URLSearchParams): number | undefined {
  const raw = params.get('since');
  if (raw === null) return undefined;
  const since = Number(raw);
  if (!/^\d{1,16}$/.test(raw) || !Number.isSafeInteger(since)) {
    throw new BubbleError(
      'UB_ERR_BAD_REQUEST',
      'since must be a time in milliseconds since the epoch (a non-negative integer)',
    );
  }
  return since;
}
