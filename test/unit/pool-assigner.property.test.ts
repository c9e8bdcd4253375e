import { fnv1a32, poolOf } from '@bubble/protocol';
import { assignPools } from '@bubble/server';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

const POOLS = 100;
const nodeIds = fc.uniqueArray(fc.constantFrom<string>('c0', 'c1', 'c2', 'c3', 'c4', 'c5', 'c6'), {
  maxLength: 7,
});

function counts(owners: readonly (string | null)[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const owner of owners) if (owner) out.set(owner, (out.get(owner) ?? 0) + 1);
  return out;
}

/** The fewest pools that must change owner to reach a balanced plan from `previous`. */
function minimumMoves(previous: readonly (string | null)[], cores: readonly string[]): number {
  if (cores.length === 0) return 0;
  const live = new Set(cores);
  const held = counts(previous.map((o) => (o && live.has(o) ? o : null)));
  const base = Math.floor(POOLS / cores.length);
  const larger = POOLS % cores.length;
  const ranked = [...cores].sort((a, b) => (held.get(b) ?? 0) - (held.get(a) ?? 0));
  let kept = 0;
  ranked.forEach((core, i) => (kept += Math.min(held.get(core) ?? 0, base + (i < larger ? 1 : 0))));
  return POOLS - kept;
}

describe('assignPools', () => {
  it('balances within one pool per core and moves only what it must', () => {
    fc.assert(
      fc.property(fc.array(nodeIds, { minLength: 1, maxLength: 8 }), (steps) => {
        let owners: (string | null)[] = Array.from({ length: POOLS }, () => null);
        for (const cores of steps) {
          const next = assignPools(owners, cores, POOLS);
          if (cores.length === 0) {
            expect(next.every((o) => o === null)).toBe(true);
          } else {
            expect(next.every((o) => o !== null && cores.includes(o))).toBe(true);
            const sizes = cores.map((c) => counts(next).get(c) ?? 0);
            expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(1);
          }
          const moved = next.filter((o, pool) => o !== owners[pool]).length;
          const mustMove = minimumMoves(owners, cores);
          expect(moved).toBe(
            cores.length === 0 ? owners.filter((o) => o !== null).length : mustMove,
          );
          owners = next;
        }
      }),
      { numRuns: 300 },
    );
  });

  it('moves exactly a third of the pools when a third core joins two', () => {
    const two = assignPools([], ['a', 'b'], POOLS);
    const three = assignPools(two, ['a', 'b', 'c'], POOLS);
    expect(three.filter((o, p) => o !== two[p]).length).toBe(33);
    expect(three.filter((o) => o === 'c').length).toBe(33);
  });
});

describe('poolOf', () => {
  it('keeps every pool within ±20% of the mean for random ids', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 2 ** 31 - 1 }), (seed) => {
        let state = seed;
        const random = () => (state = (Math.imul(state, 48271) % 2147483647) >>> 0) / 2147483647;
        const sizes = new Array<number>(POOLS).fill(0);
        const users = 100_000;
        for (let i = 0; i < users; i++) {
          const id = `u${Math.floor(random() * 1e12).toString(36)}${i.toString(36)}`;
          sizes[poolOf(id, POOLS)]!++;
        }
        const mean = users / POOLS;
        expect(Math.max(...sizes)).toBeLessThanOrEqual(mean * 1.2);
        expect(Math.min(...sizes)).toBeGreaterThanOrEqual(mean * 0.8);
      }),
      { numRuns: 5 },
    );
  });

  it('is the hash modulo the pool count, for any id and pool count', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'binary' }),
        fc.integer({ min: 1, max: 100_000 }),
        (id, pools) => {
          expect(poolOf(id, pools)).toBe(fnv1a32(id) % pools);
        },
      ),
    );
  });

  it('is stable: documented values never change', () => {
    // FNV-1a 32-bit of the UTF-8 id, mod the pool count (docs/architecture.md).
    expect(fnv1a32('alice')).toBe(2267157479);
    expect([poolOf('alice', 100), poolOf('bob', 100), poolOf('u:42@x.y', 100)]).toEqual([
      79, 44, 1,
    ]);
  });
});
