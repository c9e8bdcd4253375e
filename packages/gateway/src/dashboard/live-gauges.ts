import { Counter, Gauge, type Registry } from 'prom-client';
import type { PushStats } from '../live/live-users.js';

/** What a gateway with live badges tells /metrics (and so the dashboard) about itself. */
export interface LiveGaugeSource {
  connections(): number;
  /** The most sockets the gateway accepts; past it new ones are closed with 1013. */
  connectionLimit(): number;
  usersHeld(): number;
  pushStats(): PushStats;
}

const sources = new WeakMap<Registry, Set<LiveGaugeSource>>();

function sum(set: ReadonlySet<LiveGaugeSource>, read: (s: LiveGaugeSource) => number): number {
  let total = 0;
  for (const source of set) total += read(source);
  return total;
}

/**
 * Registers `bubble_ws_connections`, `bubble_ws_connections_max`, `bubble_gateway_users_held` and the push queue's figures on
 * `registry` (once per registry; several gateways sharing one registry are summed) and adds
 * `source` to them. The returned function removes it again.
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
      name: 'bubble_ws_connections_max',
      help: 'WebSocket connections the gateway of this process accepts at most (then closes new ones with 1013)',
      registers: [registry],
      collect() {
        this.set(sum(tracked, (s) => s.connectionLimit()));
      },
    });
    const pushTotal = (name: string, help: string, read: (stats: PushStats) => number) =>
      new Counter({
        name,
        help,
        registers: [registry],
        // Kept as plain numbers on the hot path; read at scrape time.
        collect() {
          this.reset();
          this.inc(sum(tracked, (s) => read(s.pushStats())));
        },
      });
    pushTotal(
      'bubble_gateway_changes_routed_total',
      'Badge changes routed to this gateway for users with sockets',
      (stats) => stats.routed,
    );
    pushTotal(
      'bubble_gateway_changes_superseded_total',
      'Routed changes replaced by a newer one before their turn in the push queue (never sent)',
      (stats) => stats.superseded,
    );
    pushTotal(
      'bubble_gateway_pushes_total',
      "Badges handed from the push queue to users' sockets",
      (stats) => stats.pushed,
    );
    new Gauge({
      name: 'bubble_gateway_push_backlog',
      help: 'Users waiting in the push queue for their frame',
      registers: [registry],
      collect() {
        this.set(sum(tracked, (s) => s.pushStats().backlog));
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
