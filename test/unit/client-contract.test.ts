/**
 * The SDK (packages/client) imports nothing at run time, so it restates parts of the contract;
 * this file proves each copy equal to @bubble/protocol's. The types are checked by
 * `tsc -p test/tsconfig.json` (npm run typecheck): a drift fails to compile. The run-time rules
 * (close codes, "is this badge newer") are compared by value and over random inputs.
 */
import type { Badge as SdkBadge, ReadBody } from '@bubble/client';
import {
  CLOSE,
  TERMINAL_CLOSE_CODES,
  isNewerBadge,
  type Badge,
  type ReadRequest,
} from '@bubble/protocol';
import fc from 'fast-check';
import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  CLOSE as SDK_CLOSE,
  TERMINAL as SDK_TERMINAL,
  isNewer as sdkIsNewer,
} from '../../packages/client/src/contract.js';

describe('the SDK types are the protocol types', () => {
  it('the badge object', () => {
    expectTypeOf<SdkBadge>().toEqualTypeOf<Badge>();
  });

  it('the bodies of a read (POST /v1/badge/read and read frames)', () => {
    expectTypeOf<ReadBody>().toEqualTypeOf<ReadRequest>();
  });

  it('the close codes', () => {
    expectTypeOf(SDK_CLOSE).toEqualTypeOf(CLOSE);
  });
});

describe('the SDK close codes are the protocol table', () => {
  it('the same codes under the same names', () => {
    expect(SDK_CLOSE).toEqual(CLOSE);
  });

  it('the same terminal codes: those that stop the SDK, and 4401 that asks for a new token', () => {
    const sdkTerminal = [...Object.keys(SDK_TERMINAL).map(Number), SDK_CLOSE.authFailed];
    expect(sdkTerminal.sort()).toEqual([...TERMINAL_CLOSE_CODES].sort());
  });
});

describe('the SDK "is this badge newer" rule is the protocol one', () => {
  // Few epochs and versions, so that equal epochs and equal versions come up often.
  const epoch = fc.constantFrom('e1', 'e2', 'e3');
  const version = fc.nat({ max: 5 });
  const stamp = fc.record({ epoch, version });

  it('agrees on every pair of stamps, and with nothing held', () => {
    fc.assert(
      fc.property(stamp, fc.option(stamp, { nil: undefined }), (next, held) => {
        expect(sdkIsNewer(next, held)).toBe(isNewerBadge(next, held));
      }),
      { numRuns: 2000 },
    );
  });

  it('is the rule of docs/api.md: another epoch replaces, else only a greater version', () => {
    fc.assert(
      fc.property(stamp, stamp, (next, held) => {
        const expected = next.epoch !== held.epoch || next.version > held.version;
        expect(isNewerBadge(next, held)).toBe(expected);
        expect(isNewerBadge(next, null)).toBe(true);
        expect(isNewerBadge(next, { epoch: null, version: held.version })).toBe(true);
      }),
    );
  });
});
