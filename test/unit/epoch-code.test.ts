/**
 * A gateway compares the epoch of each routed change with the newest it holds as two numbers
 * (epochCode): two epochs must have equal codes exactly when they are equal, and an epoch that
 * newEpoch did not make must have none (-1), so it is compared as text.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { epochCode, newEpoch } from '@bubble/protocol';

const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const epochLike = fc
  .array(fc.constantFrom(...BASE64URL), { minLength: 8, maxLength: 8 })
  .map((chars) => chars.join(''));
const anyText = fc.oneof(
  epochLike,
  fc.string({ maxLength: 10 }),
  fc.string({ unit: 'binary', maxLength: 9 }),
);
const code = (text: string) => epochCode(text, 0, text.length);

describe('epochCode', () => {
  it('is equal for two epochs exactly when they are equal', () => {
    fc.assert(
      fc.property(anyText, anyText, (a, b) => {
        if (code(a) >= 0 && code(b) >= 0) expect(code(a) === code(b)).toBe(a === b);
      }),
      { numRuns: 5_000 },
    );
    fc.assert(
      fc.property(epochLike, fc.nat({ max: 7 }), fc.constantFrom(...BASE64URL), (a, at, c) => {
        const b = a.slice(0, at) + c + a.slice(at + 1);
        expect(code(a) === code(b)).toBe(a === b);
      }),
    );
  });

  it('every epoch newEpoch makes has one, a safe integer; anything else has none', () => {
    for (let i = 0; i < 2_000; i++) {
      const value = code(newEpoch());
      expect(value).toBeGreaterThanOrEqual(0);
      expect(Number.isSafeInteger(value)).toBe(true);
    }
    fc.assert(
      fc.property(fc.string({ maxLength: 12 }), (text) => {
        const made = text.length === 8 && [...text].every((c) => BASE64URL.includes(c));
        expect(code(text) >= 0).toBe(made);
      }),
    );
    expect(code('k3fA9zQé')).toBe(-1);
    expect(code('k3fA9zQ=')).toBe(-1);
    expect(code('k3fA9zQ')).toBe(-1);
  });

  it('reads the epoch where it lies in a longer text', () => {
    fc.assert(
      fc.property(
        fc.string({ maxLength: 5 }),
        epochLike,
        fc.string({ maxLength: 5 }),
        (a, e, b) => {
          expect(epochCode(a + e + b, a.length, a.length + e.length)).toBe(code(e));
        },
      ),
    );
  });
});
