/**
 * One rule for "same counts" in both engines: the Redis script compares encodeCounts' text, the
 * memory engine calls sameCounts, which must agree with it on every pair of states.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  decodeBadgeState,
  decodeChanges,
  decodeCounts,
  encodeCounts,
  sameCounts,
} from '@bubble/protocol';

const NAMES = ['f', 'n:1', 'c:conv', 'r:dot', 'toString', 'constructor', '__proto__', 'é'];
const name = fc.oneof(fc.constantFrom(...NAMES), fc.stringMatching(/^[A-Za-z0-9_.:@-]{1,8}$/));
const value = fc.oneof(
  fc.constantFrom(0, -0, 1, 2, NaN, Infinity, -Infinity, 2 ** 53, 1e21),
  fc.integer({ min: -3, max: 3 }),
  fc.double(),
);
const counts = fc
  .array(fc.tuple(name, value), { maxLength: 5 })
  .map((pairs) => Object.fromEntries(pairs) as Record<string, number>);
/** A second state derived from the first, so that equal counts are common. */
const related = counts.chain((a) =>
  fc.tuple(
    fc.constant(a),
    fc.oneof(
      fc.constant({ ...a }),
      fc.constant(Object.fromEntries(Object.entries(a).reverse())),
      fc.tuple(name, fc.constantFrom(0, -0)).map(([zero, z]) => ({ ...a, [zero]: z })),
      fc.tuple(name, value).map(([changed, v]) => ({ ...a, [changed]: v })),
      counts,
    ),
  ),
);

describe('badge-state counts', () => {
  it('sameCounts agrees with comparing encodeCounts', () => {
    fc.assert(
      fc.property(related, ([a, b]) => {
        expect(sameCounts(a, b)).toBe(encodeCounts(a) === encodeCounts(b));
        expect(sameCounts(b, a)).toBe(sameCounts(a, b));
      }),
      { numRuns: 5000 },
    );
  });

  it('decodes what it encodes, zero counts left out', () => {
    // decodeCounts assigns names on a plain object, where "__proto__" is no own property.
    const decodable = counts.filter((fields) => !Object.hasOwn(fields, '__proto__'));
    fc.assert(
      fc.property(decodable, (fields) => {
        const integers = Object.fromEntries(
          Object.entries(fields).map(([key, v]) => [key, Number.isFinite(v) ? Math.trunc(v) : 1]),
        );
        const nonZero = Object.fromEntries(Object.entries(integers).filter(([, v]) => v !== 0));
        expect(decodeCounts(encodeCounts(integers))).toEqual(nonZero);
        expect(sameCounts(decodeCounts(encodeCounts(integers)), integers)).toBe(true);
      }),
    );
  });

  it('sorts by name and drops zeros', () => {
    expect(encodeCounts({ n: 2, b: 0, a: 1 })).toBe('a=1,n=2');
    expect(encodeCounts({ f: 0 })).toBe('');
    expect(encodeCounts({})).toBe('');
  });

  it('decodes a stored state and a published message', () => {
    expect(decodeBadgeState('ep|3|1700|a=1,n=2')).toEqual({
      epoch: 'ep',
      version: 3,
      computedAt: 1700,
      fields: { a: 1, n: 2 },
    });
    expect(decodeBadgeState('ep|1|5|')).toEqual({
      epoch: 'ep',
      version: 1,
      computedAt: 5,
      fields: {},
    });
    expect(decodeChanges('7\nu1\nep|2|9|f=1\nu2\nxy|1|9|')).toEqual([
      { user: 'u1', epoch: 'ep', version: 2, computedAt: 9, fields: { f: 1 } },
      { user: 'u2', epoch: 'xy', version: 1, computedAt: 9, fields: {} },
    ]);
    expect(decodeChanges('-')).toEqual([]);
  });
});
