import { usersByPool } from '@bubble/protocol';
import type { PoolEvent } from '../change-log/change-log.js';

/** A `marks` event for each user, grouped by their pool: what a membership change appends. */
export function marksEventsByPool(
  users: readonly string[],
  pools: number,
): Map<number, PoolEvent[]> {
  const byPool = new Map<number, PoolEvent[]>();
  for (const [pool, list] of usersByPool(users, pools)) {
    byPool.set(
      pool,
      list.map((user) => ({ kind: 'marks', user })),
    );
  }
  return byPool;
}
