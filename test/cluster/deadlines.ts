/**
 * The deadlines the crash tests assert, measured rather than waited out loosely: when a core's
 * pools are owned again by a survivor, from the survivor's own 'pools taken' lines.
 */
import { waitFor, type RoleProcess } from '@bubble/test-utils';
import { expect } from 'vitest';
import { heldPools } from './pool-tenures.js';
import { type Cluster } from './harness.js';

/**
 * Waits until `survivor` is assigned and holds every pool of `previous` (pool → the fence of its
 * previous holder) under a newer fence, then asserts it took the last of them within
 * `deadlineMs` of `since`. Returns how long after `since` that was.
 */
export async function expectOwnedAgainWithin(
  c: Cluster,
  survivor: RoleProcess,
  previous: ReadonlyMap<number, number>,
  since: number,
  deadlineMs: number,
): Promise<number> {
  await waitFor(
    async () => {
      const [owners, fences] = await Promise.all([c.owners(), c.fences()]);
      const held = heldPools(survivor);
      return [...previous].every(
        ([pool, fence]) =>
          owners[pool] === survivor.nodeId && fences[pool]! > fence && held.has(pool),
      );
    },
    {
      // Room past the deadline to observe it was missed, and by how much.
      timeoutMs: deadlineMs + 5_000,
      intervalMs: 20,
      message: `${survivor.name} did not take ${previous.size} pools over`,
    },
  );
  const takenAt = new Map<number, number>();
  for (const line of survivor.logs('pools taken', since)) {
    for (const pool of line.pools as number[]) if (previous.has(pool)) takenAt.set(pool, line.time);
  }
  expect([...takenAt.keys()].sort((a, b) => a - b)).toEqual(
    [...previous.keys()].sort((a, b) => a - b),
  );
  const ownedAfter = Math.max(...takenAt.values()) - since;
  expect(
    ownedAfter,
    `owned again ${ownedAfter} ms after, deadline ${deadlineMs} ms`,
  ).toBeLessThanOrEqual(deadlineMs);
  return ownedAfter;
}
