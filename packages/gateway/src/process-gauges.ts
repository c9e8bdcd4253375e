import { withTimeout } from '@bubble/protocol';
import { Gauge, type Registry } from 'prom-client';

/** How long a scrape waits for the store's PING before it reports the store as down. */
export const STORE_PING_TIMEOUT_MS = 1000;

const storeTracked = new WeakSet<Registry>();

/**
 * `bubble_redis_up` on `registry` (once per registry): at each scrape, 1 when `ping` resolves
 * within STORE_PING_TIMEOUT_MS, else 0. The same check /readyz makes, so the alert and the
 * probe agree.
 */
export function trackStoreUp(registry: Registry, ping: () => Promise<void>): void {
  if (storeTracked.has(registry)) return;
  storeTracked.add(registry);
  new Gauge({
    name: 'bubble_redis_up',
    help: `1 when the store (Redis) answered PING within ${STORE_PING_TIMEOUT_MS} ms at scrape time, else 0`,
    registers: [registry],
    async collect() {
      this.set((await answersWithin(ping, STORE_PING_TIMEOUT_MS)) ? 1 : 0);
    },
  });
}

function answersWithin(ping: () => Promise<void>, timeoutMs: number): Promise<boolean> {
  return withTimeout(ping(), timeoutMs).then(
    () => true,
    () => false,
  );
}

/** What a bubble-server tells /metrics: whether it leads, and the leader's view of the pools. */
export interface SchedulerGaugeSource {
  readonly isLeader: boolean;
  /** Pools with no live core assigned after the latest leader round (0 unless leading). */
  readonly poolsUnowned: number;
}

/**
 * `bubble_server_leading` and `bubble_pools_unowned` on `registry` for one bubble-server.
 * Followers report 0 unowned pools: only the leader's figure counts, so `max()` over all
 * servers is the cluster's.
 */
export function trackSchedulerGauges(registry: Registry, source: SchedulerGaugeSource): void {
  new Gauge({
    name: 'bubble_server_leading',
    help: '1 on the bubble-server that holds the leader lease, 0 on the others',
    registers: [registry],
    collect() {
      this.set(source.isLeader ? 1 : 0);
    },
  });
  new Gauge({
    name: 'bubble_pools_unowned',
    help: 'Pools the leader could assign to no live bubble-core (reported by the leader; 0 on followers)',
    registers: [registry],
    collect() {
      this.set(source.isLeader ? source.poolsUnowned : 0);
    },
  });
}
