/**
 * The save path's hand-written RESP (packages/store/src/redis/resp-writer.ts) and packed-state
 * writer (fenced-badges/packed-state-writer.ts) against the plainest encoding there is: strings joined, then
 * Buffer.from(…, 'utf8'). Buffers are sized by the writers' own bounds, so a bound too small
 * shows as bytes missing.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeBadgeState, encodeCounts } from '@bubble/protocol';
import {
  PackedStateWriter,
  packedStateBound,
} from '../../packages/store/src/fenced-badges/packed-state-writer.js';
import {
  EncodingSlab,
  FRAMING_BOUND,
  bulkStringBound,
  endBulkString,
  evalInsteadOfEvalsha,
  writeArrayHeader,
  writeBulkNumber,
  writeBulkString,
  writeLengthPrefix,
} from '../../packages/store/src/redis/resp-writer.js';

type Arg = string | number;

function referenceCommand(args: readonly Arg[]): Buffer {
  const bulk = (text: string) => `$${Buffer.byteLength(text, 'utf8')}\r\n${text}\r\n`;
  return Buffer.from(`*${args.length}\r\n${args.map((arg) => bulk(String(arg))).join('')}`);
}

function argBound(arg: Arg): number {
  return typeof arg === 'string' ? bulkStringBound(arg) : FRAMING_BOUND + 24;
}

function encode(args: readonly Arg[]): Buffer {
  let bound = FRAMING_BOUND;
  for (const arg of args) bound += argBound(arg);
  const target = Buffer.alloc(bound);
  let pos = writeArrayHeader(target, 0, args.length);
  for (const arg of args) {
    pos =
      typeof arg === 'string'
        ? writeBulkString(target, pos, arg)
        : writeBulkNumber(target, pos, arg);
  }
  expect(pos).toBeLessThanOrEqual(bound);
  return target.subarray(0, pos);
}

const text = fc.oneof(
  fc.constant(''),
  fc.string(),
  fc.string({ unit: 'binary' }),
  fc.string({ unit: 'grapheme', minLength: 1 }),
  // Long enough that UTF-8 needs more digits in the length than the code units do.
  fc.string({ unit: fc.constantFrom('é', '€', '😀', 'a'), minLength: 3, maxLength: 400 }),
);
const number = fc.oneof(
  fc.integer({ min: 0, max: 0x7fffffff }),
  fc.integer(),
  fc.constantFrom(0, -0, 0x7fffffff, 0x80000000, Number.MAX_SAFE_INTEGER, 1e21, -1e21),
  fc.constantFrom(Number.MAX_VALUE, Number.MIN_VALUE, Infinity, -Infinity, NaN),
  fc.double(),
);

describe('RESP writer', () => {
  it('writes any arguments as the reference encoding does', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(text, number), { maxLength: 12 }), (args) => {
        expect(encode(args)).toEqual(referenceCommand(args));
      }),
      { numRuns: 2000 },
    );
  });

  it('writes the boundary cases byte for byte', () => {
    const cases: Arg[][] = [
      [],
      [''],
      ['', '', ''],
      ['EVALSHA', 'a'.repeat(40), 7],
      ['\uD800'], // a lone surrogate: Buffer writes U+FFFD, as ioredis would send it
      ['a\uDC00b'],
      ['😀'],
      ['é'.repeat(5), '€'.repeat(4), 'x'.repeat(9)],
      [0, -0, 9, 10, 99, 100, 2 ** 31 - 1, 2 ** 31, 2 ** 53, 1.5, -7, 1e21, 1e-7, NaN],
    ];
    for (const args of cases) expect(encode(args)).toEqual(referenceCommand(args));
  });

  it('mends a bulk string whose bytes outgrew the length announced', () => {
    // 4 code units announced, 10 bytes written: the prefix grows a digit and the bytes move up.
    const target = Buffer.alloc(64);
    const at = writeLengthPrefix(target, 0, 4);
    const end = at + target.write('éé€€', at, 'utf8');
    expect(target.subarray(0, endBulkString(target, 0, at, end, 4))).toEqual(
      Buffer.from('$10\r\néé€€\r\n'),
    );
  });

  it('turns an encoded EVALSHA into the same call as EVAL', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'binary', minLength: 1 }),
        fc.array(fc.oneof(text, number), { maxLength: 8 }),
        (lua, args) => {
          const sha = 'f'.repeat(40);
          const call = ['EVALSHA', sha, 2, 'k1', 'k2', ...args];
          const evalsha = encode(call);
          // Where the key count starts: after the array header, EVALSHA and the sha.
          const bodyAt = `*${call.length}\r\n$7\r\nEVALSHA\r\n$40\r\n${sha}\r\n`.length;
          expect(evalInsteadOfEvalsha(evalsha, bodyAt, lua)).toEqual(
            referenceCommand(['EVAL', lua, 2, 'k1', 'k2', ...args]),
          );
        },
      ),
    );
  });
});

const fieldName = fc.oneof(
  fc.stringMatching(/^[a-z][a-z0-9:_.@-]{0,12}$/),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 6 }).filter((name) => !/[=,|]/.test(name)),
);
const fields = fc.dictionary(fieldName, fc.oneof(fc.constant(0), number), { maxKeys: 5 });
const epoch = fc.oneof(fc.stringMatching(/^[A-Za-z0-9_-]{8}$/), fc.string({ minLength: 1 }));

describe('packed state writer', () => {
  it('writes what a stored state is, inside a bulk string', () => {
    const writer = new PackedStateWriter();
    fc.assert(
      fc.property(epoch, fc.nat(), number, fields, (stateEpoch, version, computedAt, counts) => {
        const stamp = String(computedAt);
        const target = Buffer.alloc(
          FRAMING_BOUND + packedStateBound(stateEpoch.length, stamp, counts),
        );
        const length = writer.measure(stateEpoch, version, stamp, counts);
        const at = writeLengthPrefix(target, 0, length);
        const end = endBulkString(target, 0, at, writer.write(target, at), length);
        const packed = `${stateEpoch}|${version}|${stamp}|${encodeCounts(counts)}`;
        const expected = `$${Buffer.byteLength(packed)}\r\n${packed}\r\n`;
        expect(target.subarray(0, end)).toEqual(Buffer.from(expected));
        if (!/[|\n]/.test(stateEpoch)) {
          expect(decodeBadgeState(packed).version).toBe(version);
        }
      }),
      { numRuns: 2000 },
    );
  });
});

describe('encoding slab', () => {
  it('hands out room in use to no one, and reuses it once no call is in flight', async () => {
    const slab = new EncodingSlab();
    let settle!: () => void;
    const first = slab.reserve(100);
    const held = slab.claim(60, new Promise<void>((resolve) => (settle = resolve)));
    const second = slab.reserve(100);
    expect(second.buffer).toBe(first.buffer);
    expect(second.byteOffset).toBe(first.byteOffset + 60);
    // More than is left: a new slab, the old one left to the views in flight.
    const large = slab.reserve(4 << 20);
    expect(large.buffer).not.toBe(first.buffer);
    expect(large.length).toBe(4 << 20);
    settle();
    await held;
    expect(slab.reserve(100).byteOffset).toBe(large.byteOffset);
  });
});
