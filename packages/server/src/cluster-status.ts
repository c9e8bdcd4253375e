import type { ClusterStatus } from '@bubble/protocol';
import type { BubbleStore } from '@bubble/store';

/** What GET /v1/cluster shows, read from the store (any node can answer it). */
export async function readClusterStatus(store: BubbleStore): Promise<ClusterStatus> {
  const { coordination, presence } = store;
  const [leader, assignment, nodes, sweeps, sizes] = await Promise.all([
    coordination.leader(),
    coordination.assignment(),
    coordination.liveNodes(),
    coordination.sweepReports(),
    presence.poolSizes(),
  ]);
  const live = new Set(nodes.map((n) => n.id));
  return {
    leader,
    generation: assignment?.generation ?? 0,
    pools: sizes.map((online, pool) => ({ pool, owner: assignment?.owners[pool] ?? null, online })),
    nodes,
    sweeps: sweeps.filter((s) => live.has(s.node)),
    online: sizes.reduce((a, b) => a + b, 0),
  };
}
