/**
 * What a core's own JSON log says about the pools it held: the fences it took and dropped, its
 * tenures of each pool, and the checks on them (no overlap, no fence going back, minimal moves
 * when cores come and go).
 */
import { RoleProcess } from '@bubble/test-utils';

/** One message a core published on a pool's badge channel (one fenced, accepted write). */
export interface Published {
  pool: number;
  /** The writer's fencing token; null for an unfenced write (a cold start). */
  fence: number | null;
  users: string[];
  feeds: number[];
  receivedAt: number;
}

/** The pools a core holds according to its own log: taken and not dropped since. */
export function heldPools(core: RoleProcess): Set<number> {
  return new Set(heldFences(core).keys());
}

/** The pools a core holds according to its own log, each with the fence it took it under. */
export function heldFences(core: RoleProcess): Map<number, number> {
  const held = new Map<number, number>();
  for (const line of core.lines) {
    if (line.msg === 'pools taken') {
      const fences = line.fences as number[];
      (line.pools as number[]).forEach((pool, i) => held.set(pool, fences[i]!));
    } else if (line.msg === 'pool dropped') held.delete(line.pool as number);
  }
  return held;
}

export interface Tenure {
  node: string;
  pool: number;
  fence: number;
  takenAt: number;
  /** When the node logged dropping it; undefined while it holds it (or died holding it). */
  droppedAt?: number;
  dropReason?: string;
}

/** Every holding of every pool, from the 'pools taken' and 'pool dropped' lines of the cores. */
export function tenures(cores: RoleProcess[]): Tenure[] {
  const all: Tenure[] = [];
  for (const core of cores) {
    const open = new Map<number, Tenure>();
    for (const line of core.lines) {
      if (line.msg === 'pools taken') {
        const pools = line.pools as number[];
        const fences = line.fences as number[];
        pools.forEach((pool, i) => {
          const tenure: Tenure = { node: line.node!, pool, fence: fences[i]!, takenAt: line.time };
          open.set(pool, tenure);
          all.push(tenure);
        });
      } else if (line.msg === 'pool dropped') {
        const tenure = open.get(line.pool as number);
        if (tenure) {
          tenure.droppedAt = line.time;
          tenure.dropReason = line.reason as string;
          open.delete(line.pool as number);
        }
      }
    }
  }
  return all;
}

/**
 * Pools held by two nodes at once according to the logs: a tenure that began before the
 * previous holder (lower fence) logged dropping the pool.
 */
export function overlappingTenures(cores: RoleProcess[]): Array<[Tenure, Tenure]> {
  const byPool = new Map<number, Tenure[]>();
  for (const t of tenures(cores)) {
    let list = byPool.get(t.pool);
    if (!list) byPool.set(t.pool, (list = []));
    list.push(t);
  }
  const overlaps: Array<[Tenure, Tenure]> = [];
  for (const list of byPool.values()) {
    list.sort((a, b) => a.fence - b.fence);
    for (let i = 1; i < list.length; i++) {
      const before = list[i - 1]!;
      const after = list[i]!;
      if (before.droppedAt === undefined || before.droppedAt > after.takenAt) {
        overlaps.push([before, after]);
      }
    }
  }
  return overlaps;
}

/**
 * Accepted fenced writes that carried a fence lower than one already accepted for the same pool
 * (in the order Redis published them). Unfenced cold-start writes take no part.
 */
export function fenceRegressions(
  published: Published[],
): Array<{ pool: number; fence: number; after: number }> {
  const max = new Map<number, number>();
  const regressions: Array<{ pool: number; fence: number; after: number }> = [];
  for (const { pool, fence } of published) {
    if (fence === null) continue;
    const seen = max.get(pool) ?? 0;
    if (fence < seen) regressions.push({ pool, fence, after: seen });
    else max.set(pool, fence);
  }
  return regressions;
}

/**
 * The fewest pools that must change owner to go from `previous` to a balanced spread over
 * `cores` (counts differ by at most one): the cores holding most keep the larger quotas.
 */
export function minimumMoves(
  previous: readonly (string | null)[],
  cores: readonly string[],
): number {
  const pools = previous.length;
  const held = cores
    .map((core) => previous.filter((owner) => owner === core).length)
    .sort((a, b) => b - a);
  const base = Math.floor(pools / cores.length);
  const larger = pools % cores.length;
  const kept = held.reduce((sum, n, i) => sum + Math.min(n, base + (i < larger ? 1 : 0)), 0);
  return pools - kept;
}

export function movedPools(
  before: readonly (string | null)[],
  after: readonly (string | null)[],
): number {
  return after.filter((owner, pool) => owner !== before[pool]).length;
}

export function countsOf(owners: readonly (string | null)[], cores: RoleProcess[]): number[] {
  return cores.map((core) => owners.filter((o) => o === core.nodeId).length);
}
