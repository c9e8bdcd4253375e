/**
 * The gateway's routed changes are decoded lazily (decodeChangesLazily): read field by field
 * they must be what decodeChanges makes of the same message.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  decodeChanges,
  decodeChangesLazily,
  encodeCounts,
} from '../../packages/store/src/badge-state.js';

const plain = (c: {
  user: string;
  epoch: string;
  version: number;
  computedAt: number;
  fields: Record<string, number>;
}) => ({
  user: c.user,
  epoch: c.epoch,
  version: c.version,
  computedAt: c.computedAt,
  fields: { ...c.fields },
});

describe('decodeChangesLazily', () => {
  it('reads as decodeChanges on every message', () => {
    const state = fc.record({
      user: fc.stringMatching(/^[A-Za-z0-9_:@-]{1,8}$/),
      epoch: fc.stringMatching(/^[A-Za-z0-9]{1,8}$/),
      version: fc.oneof(fc.nat(), fc.maxSafeNat()),
      computedAt: fc.oneof(fc.nat(), fc.maxSafeNat()),
      fields: fc.dictionary(
        fc.constantFrom('f', 'n:1', 'c:x', 'r:d'),
        fc.integer({ min: 1, max: 999 }),
      ),
    });
    fc.assert(
      fc.property(fc.array(state, { maxLength: 6 }), fc.boolean(), (states, trailing) => {
        const message =
          [
            '-',
            ...states.flatMap((s) => [
              s.user,
              `${s.epoch}|${s.version}|${s.computedAt}|${encodeCounts(s.fields)}`,
            ]),
          ].join('\n') + (trailing ? '\n' : '');
        expect(decodeChangesLazily(message).map(plain)).toEqual(decodeChanges(message).map(plain));
      }),
    );
  });

  it('decodes the counts once and only when read', () => {
    const [change] = decodeChangesLazily('7\nu1\nep|2|9|f=1,n:1=3');
    expect(change!.version).toBe(2);
    expect(change!.fields).toBe(change!.fields);
    expect(change!.fields).toEqual({ f: 1, 'n:1': 3 });
    expect(change!.computedAt).toBe(9);
    expect(decodeChangesLazily('-')).toEqual([]);
  });
});
