import { BubbleError, withTimeout } from '@bubble/protocol';
import { sendJson } from '../http/respond.js';
import type { Router } from '../http/router.js';
import type { GatewayMetrics } from '../metrics.js';
import { STORE_PING_TIMEOUT_MS, trackStoreUp } from '../process-gauges.js';

export interface OperatorDeps {
  metrics: GatewayMetrics;
  /** Resolves when every dependency answers; throws otherwise. */
  checkDependencies(): Promise<void>;
  /** False while the role waits for its store or is still starting. */
  isStarted(): boolean;
  isDraining(): boolean;
  isOverloaded(): boolean;
}

/** Liveness, readiness and metrics, served by every role. */
export function addOperatorRoutes(router: Router, deps: OperatorDeps): void {
  trackStoreUp(deps.metrics.registry, () => deps.checkDependencies());
  router
    .add('GET', '/healthz', async ({ res }) => {
      sendJson(res, 200, { status: 'ok' });
    })
    .add('GET', '/readyz', async ({ res }) => {
      if (!deps.isStarted()) throw new BubbleError('UB_ERR_UNAVAILABLE', 'starting');
      if (deps.isDraining()) throw new BubbleError('UB_ERR_UNAVAILABLE', 'draining');
      if (deps.isOverloaded()) throw new BubbleError('UB_ERR_UNAVAILABLE', 'overloaded');
      try {
        // Bounded like bubble_redis_up, so the probe and the alert agree on a store that hangs.
        await withTimeout(deps.checkDependencies(), STORE_PING_TIMEOUT_MS);
      } catch (err) {
        throw new BubbleError('UB_ERR_UNAVAILABLE', 'a dependency does not answer', { cause: err });
      }
      sendJson(res, 200, { status: 'ready' });
    })
    .add('GET', '/metrics', async ({ res }) => {
      const text = await deps.metrics.registry.metrics();
      res.writeHead(200, { 'content-type': deps.metrics.registry.contentType });
      res.end(text);
    });
}
