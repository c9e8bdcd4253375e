import { Gauge, type Registry } from 'prom-client';

/** What a gateway with live badges tells /metrics (and so the dashboard) about itself. */
export interface LiveGaugeSource {
  connections(): number;
  usersHeld(): number;
}

const sources = new WeakMap<Registry, Set<LiveGaugeSource>>();

function sum(set: ReadonlySet<LiveGaugeSource>, read: (s: LiveGaugeSource) => number): number {
  let total = 0;
  for (const source of set) total += read(source);
  return total;
}

/**
 * Registers `bubble_ws_connections` and `bubble_gateway_users_held` on `registry` (once per
 * registry; several gateways sharing one registry are summed) and adds `source` to them. The
 * returned function removes it again.
 */
export function trackLiveGauges(registry: Registry, source: LiveGaugeSource): () => void {
  let set = sources.get(registry);
  if (!set) {
    const tracked = new Set<LiveGaugeSource>();
    set = tracked;
    sources.set(registry, tracked);
    new Gauge({
      name: 'bubble_ws_connections',
      help: 'Open WebSocket connections on the gateway of this process',
      registers: [registry],
      collect() {
        this.set(sum(tracked, (s) => s.connections()));
      },
    });
    new Gauge({
      name: 'bubble_gateway_users_held',
      help: 'Users the gateway of this process holds online (sockets and recent pollers)',
      registers: [registry],
      collect() {
        this.set(sum(tracked, (s) => s.usersHeld()));
      },
    });
  }
  set.add(source);
  const held = set;
  return () => {
    held.delete(source);
  };
}
