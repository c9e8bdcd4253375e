/**
 * `bubble bench sync` at a tiny size, against the built gateway: every read on a desktop is
 * answered, every phone is corrected to 0 in order (no entry out of seq), none is lost, and the
 * figures bench.md names are in the JSON. Speeds are not asserted (the machine is shared);
 * docs/benchmarks.md holds those.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { buildOnce } from '../support/build.js';

// From dist/: the bench forks its socket drivers as built modules.
beforeAll(buildOnce, 120_000);

describe('bench sync (tiny size)', () => {
  it('corrects every phone after a read on its desktop, losing none', async () => {
    const users = 200;
    const { benchSync } = await import('../../packages/bench/dist/sync.js');
    const figures = await benchSync({ users, readsPerSec: 200, minIntervalMs: 300, drivers: 1 });
    for (const key of ['syncP50Ms', 'syncP99Ms', 'deliveriesPerSec', 'lost']) {
      expect(typeof figures[key], key).toBe('number');
    }
    expect(figures.lost).toBe(0);
    expect(figures.corrected).toBe(users);
    const reads = figures.reads as { sent: number; answered: number };
    expect(reads).toMatchObject({ sent: users, answered: users });
    const receiver = figures.receiver as { faults: Record<string, number> };
    expect(receiver.faults).toEqual({ badSignature: 0, badBody: 0, outOfOrder: 0 });
  }, 90_000);
});
