import { poolOf } from '@bubble/protocol';
import type { PoolEvent } from './cluster-types.js';

/** A `marks` event for each user, grouped by their pool: what a membership change appends. */
export function marksEventsByPool(
  users: readonly string[],
  pools: number,
): Map<number, PoolEvent[]> {
  const byPool = new Map<number, PoolEvent[]>();
  for (const user of users) {
    const pool = poolOf(user, pools);
    let events = byPool.get(pool);
    if (!events) byPool.set(pool, (events = []));
    events.push({ kind: 'marks', user });
  }
  return byPool;
}
