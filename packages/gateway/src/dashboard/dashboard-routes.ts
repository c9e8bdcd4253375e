import type { Authenticator } from '../auth.js';
import { sendJson } from '../http/respond.js';
import type { RequestContext, Router } from '../http/router.js';
import { DASHBOARD_CSP, dashboardPage } from './page.js';

export interface DashboardDeps {
  /** Checks the platform key of GET /v1/cluster when this module serves it. */
  auth: Authenticator;
  clusterStatus: () => Promise<unknown>;
  /**
   * Also answer GET /v1/cluster (platform key required) on this server: true where the operator
   * routes are served apart from the platform routes (BUBBLE_INTERNAL_PORT), so the page can read
   * the cluster from its own origin.
   */
  serveCluster: boolean;
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
 * read the cluster). Served next to /healthz, /readyz and /metrics by the gateway and `all`.
 */
export function addDashboardRoutes(router: Router, deps: DashboardDeps): void {
  const page = Buffer.from(dashboardPage());
  const servePage = async ({ res }: RequestContext) => {
    res.writeHead(200, { ...PAGE_HEADERS, 'content-length': page.length });
    res.end(page);
  };
  router.add('GET', '/dashboard', servePage).add('GET', '/dashboard/', servePage);
  if (!deps.serveCluster) return;
  router.add('GET', '/v1/cluster', async ({ req, res }) => {
    deps.auth.requirePlatform(req);
    sendJson(res, 200, await deps.clusterStatus());
  });
}
