/**
 * Grow from one `bubble core` to three and back to one (SIGTERM: a graceful leave) while posts
 * keep coming. After each change the assignment is balanced (counts differ by at most one) and
 * moved only the pools that had to move; no pool is ever held by two cores at once, by the fences
 * of the published writes and by the cores' own 'pools taken' / 'pool dropped' log lines.
 */
import { mulberry32 } from '@bubble/protocol';
import type { RoleProcess } from '@bubble/test-utils';
import { describe, expect } from 'vitest';
import { useClusterTests } from './cluster-test.js';
import { countsOf, minimumMoves, movedPools, overlappingTenures, tenures } from './pool-tenures.js';
import { FeedWorkload, ids } from './workload.js';

describe('cluster: cores joining and leaving', () => {
  const clusterTest = useClusterTests();

  clusterTest(
    '1 → 2 → 3 → 2 → 1 cores: balanced, minimal moves, never two holders',
    { label: 'scale', tag: 'scale', timeoutMs: 120_000 },
    async ({ c, seed, notes: steps }) => {
      const [, first] = await Promise.all([c.spawn('server'), c.spawn('core'), c.spawn('gateway')]);
      let owners = await c.waitSettled([first], c.settleMs);
      await c.subscribeChanges();

      const work = new FeedWorkload(c, {
        users: ids('u', 50),
        authors: ids('a', 20),
        rand: mulberry32(seed),
        clientReads: false,
      });
      await work.setup(0.7);
      const stopPosting = work.background(40);
      let generation = await c.generation();
      let moves = 0;

      /** Waits for the new spread over `cores`; checks balance and the number of moves. */
      const settle = async (label: string, cores: RoleProcess[]) => {
        const started = Date.now();
        const before = owners;
        owners = await c.waitSettled(cores, c.settleMs);
        const moved = movedPools(before, owners);
        const minimum = minimumMoves(
          before,
          cores.map((core) => core.nodeId),
        );
        const counts = countsOf(owners, cores);
        expect(Math.max(...counts) - Math.min(...counts), label).toBeLessThanOrEqual(1);
        expect(
          counts.reduce((a, b) => a + b),
          label,
        ).toBe(c.pools);
        expect(moved, label).toBe(minimum);
        const now = await c.generation();
        const generations = now - generation;
        generation = now;
        moves += moved;
        steps.push(
          `${label}: counts ${counts.join('/')}, moved ${moved} (minimum ${minimum}), ` +
            `${generations} generation(s), settled in ${Date.now() - started} ms`,
        );
        return moved;
      };

      const second = await c.spawn('core');
      expect(await settle('1→2', [first, second])).toBe(50);
      const third = await c.spawn('core');
      const moved23 = await settle('2→3', [first, second, third]);
      expect([33, 34]).toContain(moved23);

      // A leaver's pools move, and only those.
      const thirdsShare = owners.filter((o) => o === third.nodeId).length;
      third.signal('SIGTERM');
      expect(await third.waitExit()).toEqual({ code: 0, signal: null });
      expect(await settle('3→2', [first, second])).toBe(thirdsShare);
      second.signal('SIGTERM');
      expect(await second.waitExit()).toEqual({ code: 0, signal: null });
      expect(await settle('2→1', [first])).toBe(50);

      const posted = await stopPosting();
      await work.expectWrittenBy([first]);

      // A graceful leaver logs giving up every pool it held.
      for (const core of [second, third]) {
        const open = tenures([core]).filter((t) => t.droppedAt === undefined);
        expect(open, core.name).toEqual([]);
        expect(core.logs('bubble-core stopped').length, core.name).toBe(1);
      }

      // Never two holders: each take came after the previous holder (lower fence) logged its
      // drop, and the accepted writes' fences never went back in any pool.
      const cores = [first, second, third];
      expect(overlappingTenures(cores)).toEqual([]);
      // Every pool that moved was handed over once: no flapping between cores.
      const handovers = tenures(cores).length - c.pools;
      expect(handovers).toBe(moves);
      c.expectFencesInOrder();
      const stale = await c.staleWritesTotal();
      const reasons: Record<string, number> = {};
      for (const t of tenures(cores)) {
        if (t.dropReason) reasons[t.dropReason] = (reasons[t.dropReason] ?? 0) + 1;
      }
      return (
        `${steps.join('; ')}; ${handovers} handovers (drops ${JSON.stringify(reasons)}); ` +
        `${posted} posts during the changes; ${c.published.length} change messages; stale writes ${stale}`
      );
    },
  );
});
