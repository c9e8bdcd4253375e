/**
 * A real CoreNode that owns every pool of `store` and sweeps only when the test asks for it
 * (`sweepNow`, `requestSweep`): the tick is an hour, so no sweep runs on its own.
 */
import { systemClock } from '@bubble/protocol';
import { CoreNode, type CoreNodeOptions } from '@bubble/core';
import { MemoryPoolLocks, type BubbleStore } from '@bubble/store';
import { pino } from 'pino';

export async function startSoloCore(
  store: BubbleStore,
  overrides: Partial<CoreNodeOptions> = {},
): Promise<CoreNode> {
  const id = overrides.id ?? 'core-solo';
  const core = new CoreNode({
    id,
    store,
    locks: new MemoryPoolLocks(),
    clock: systemClock,
    logger: pino({ level: 'silent' }),
    lookbackDays: 7,
    leaseMs: 60_000,
    tickMs: 3_600_000,
    ...overrides,
  });
  await store.coordination.setAssignment({
    generation: 1,
    owners: Array.from({ length: store.pools }, () => id),
  });
  await core.start();
  return core;
}
