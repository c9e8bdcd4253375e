/**
 * The depth bound every body, frame and entry is read with (protocol's json-text.ts): the
 * text scan agrees with the depth of the parsed value, brackets inside strings and escapes
 * included, and parseJsonText refuses what is too deep with UB_ERR_BAD_REQUEST.
 */
import { BubbleError, jsonDepthOver, LIMITS, parseJsonText } from '@bubble/protocol';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

function depthOf(value: unknown): number {
  if (Array.isArray(value)) return 1 + Math.max(0, ...value.map(depthOf));
  if (typeof value === 'object' && value !== null) {
    return 1 + Math.max(0, ...Object.values(value).map(depthOf));
  }
  return 0;
}

describe('JSON depth bound', () => {
  it('the scan of the text agrees with the parsed depth, whatever the strings hold', () => {
    const tricky = fc.constantFrom('[', ']', '{', '}', '"', '\\', '\\"', 'a');
    const text = fc.array(tricky, { maxLength: 6 }).map((parts) => parts.join(''));
    fc.assert(
      fc.property(
        fc.letrec((tie) => ({
          value: fc.oneof(
            { depthSize: 'small' },
            text,
            fc.integer(),
            fc.array(tie('value'), { maxLength: 3 }),
            fc.dictionary(text, tie('value'), { maxKeys: 3 }),
          ),
        })).value,
        fc.integer({ min: 0, max: 8 }),
        (value, limit) => {
          const json = JSON.stringify(value);
          expect(jsonDepthOver(json, limit)).toBe(depthOf(value) > limit);
        },
      ),
    );
  });

  it(`parseJsonText refuses more than ${LIMITS.maxJsonDepth} levels, and what is not JSON`, () => {
    const at = (n: number) => '['.repeat(n) + ']'.repeat(n);
    expect(parseJsonText(at(LIMITS.maxJsonDepth))).toBeInstanceOf(Array);
    for (const text of [at(LIMITS.maxJsonDepth + 1), at(1_000_000), '{"a":', '']) {
      let thrown: unknown;
      try {
        parseJsonText(text, 'the frame');
      } catch (err) {
        thrown = err;
      }
      expect(thrown).toBeInstanceOf(BubbleError);
      expect((thrown as BubbleError).code).toBe('UB_ERR_BAD_REQUEST');
      expect((thrown as BubbleError).message).toMatch(/^the frame /);
    }
  });
});
