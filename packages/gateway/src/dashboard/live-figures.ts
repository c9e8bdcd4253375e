import type { NodeInfo } from '@bubble/protocol';
import type { HttpGateway } from '../http-gateway.js';

/** What a gateway adds to its heartbeat so that every dashboard can chart every gateway. */
export interface LiveFigures {
  connections: number;
  /** Badges handed to sockets since the gateway started (a counter). */
  pushed: number;
}

/** The figures a node's heartbeat carries, or null if it carries none (older nodes, cores). */
export function liveFiguresOf(node: NodeInfo): LiveFigures | null {
  const live = (node as NodeInfo & { live?: unknown }).live;
  if (typeof live !== 'object' || live === null) return null;
  const { connections, pushed } = live as Record<string, unknown>;
  if (typeof connections !== 'number' || typeof pushed !== 'number') return null;
  if (!Number.isFinite(connections) || !Number.isFinite(pushed)) return null;
  return { connections, pushed };
}

/**
 * The fields a gateway adds to its heartbeat: its connections and pushes, so that the dashboard
 * of any gateway can chart them all. Empty for a gateway without live badges.
 */
export function heartbeatFigures(gateway: Pick<HttpGateway, 'ws' | 'liveUsers'>): {
  live?: LiveFigures;
} {
  if (!gateway.liveUsers) return {};
  return {
    live: {
      connections: gateway.ws?.connections ?? 0,
      pushed: gateway.liveUsers.pushStats().pushed,
    },
  };
}
