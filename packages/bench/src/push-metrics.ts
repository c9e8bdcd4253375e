/**
 * The gateway's push-queue figures, read from its /metrics before and after a measured stretch:
 * how many routed changes it pushed or conflated, and how long they waited in its queue.
 */
import { round2 } from './live-stack.js';

export interface PushSnapshot {
  routed: number;
  pushed: number;
  superseded: number;
  /** Cumulative counts of bubble_gateway_push_wait_seconds by upper bound (seconds). */
  waitBuckets: Map<number, number>;
}

export async function readPushMetrics(gatewayUrl: string): Promise<PushSnapshot> {
  const response = await fetch(`${gatewayUrl}/metrics`, { signal: AbortSignal.timeout(5000) });
  const text = await response.text();
  const value = (name: string) => {
    const line = text.split('\n').find((l) => l.startsWith(`${name} `));
    return line ? Number(line.slice(name.length + 1)) : 0;
  };
  const waitBuckets = new Map<number, number>();
  for (const match of text.matchAll(
    /^bubble_gateway_push_wait_seconds_bucket\{le="([^"]+)"\} (\S+)$/gm,
  )) {
    waitBuckets.set(match[1] === '+Inf' ? Infinity : Number(match[1]), Number(match[2]));
  }
  return {
    routed: value('bubble_gateway_changes_routed_total'),
    pushed: value('bubble_gateway_pushes_total'),
    superseded: value('bubble_gateway_changes_superseded_total'),
    waitBuckets,
  };
}

/** What happened between two snapshots; wait quantiles are bucket upper bounds. */
export function pushFigures(before: PushSnapshot, after: PushSnapshot) {
  const routed = after.routed - before.routed;
  const bounds = [...after.waitBuckets.keys()].sort((a, b) => a - b);
  const counts = bounds.map((le) => after.waitBuckets.get(le)! - (before.waitBuckets.get(le) ?? 0));
  const total = counts.at(-1) ?? 0;
  const bound = (q: number) => {
    const i = counts.findIndex((n) => n >= q * total);
    return total === 0 || i < 0
      ? null
      : bounds[i]! === Infinity
        ? 'over the last bucket'
        : bounds[i]! * 1000;
  };
  return {
    routed,
    pushed: after.pushed - before.pushed,
    superseded: after.superseded - before.superseded,
    supersededShare: routed > 0 ? round2((after.superseded - before.superseded) / routed) : 0,
    waitP50AtMostMs: bound(0.5),
    waitP99AtMostMs: bound(0.99),
  };
}
