import { ReadReplyDecoder } from '@bubble/store';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

/** One whole reply, decoded by a fresh decoder. */
const decodeReadReply = (data: Buffer) => new ReadReplyDecoder().decode(data);

/** What Redis writes for an XREADGROUP of one stream (RESP2). */
function encodeReply(key: string, entries: { id: string; fields: string[] | null }[]): Buffer {
  const bulk = (text: string) => `$${Buffer.byteLength(text)}\r\n${text}\r\n`;
  let text = `*1\r\n*2\r\n${bulk(key)}*${entries.length}\r\n`;
  for (const { id, fields } of entries) {
    text += `*2\r\n${bulk(id)}`;
    text += fields === null ? '*-1\r\n' : `*${fields.length}\r\n${fields.map(bulk).join('')}`;
  }
  return Buffer.from(text);
}

const entryArb = fc.record({
  id: fc.tuple(fc.nat(), fc.nat()).map(([ms, seq]) => `${ms}-${seq}`),
  fields: fc.option(
    fc
      .array(
        fc.tuple(
          fc.oneof(
            fc.constantFrom(
              'v',
              'op',
              'body',
              'post',
              '1',
              'bod',
              'posts',
              'pose',
              'bodz',
              'oq',
              'w',
            ),
            fc.string(),
          ),
          fc.oneof(
            fc.constantFrom('1', 'post', 'v', '2', 'bost', 'pody', 'op'),
            fc.string({ unit: 'grapheme' }),
            fc.string(),
          ),
        ),
        { maxLength: 5 },
      )
      .map((pairs) => pairs.flat()),
    { nil: null },
  ),
});

describe('decodeReadReply (the ingest read connection)', () => {
  it('decodes every XREADGROUP reply as written, and says a strict prefix of it is incomplete', () => {
    fc.assert(
      fc.property(fc.string(), fc.array(entryArb, { maxLength: 8 }), (key, entries) => {
        const bytes = encodeReply(key, entries);
        const decoded = decodeReadReply(bytes);
        expect(decoded).toEqual({
          value: entries.map(({ id, fields }) => ({ id, fields: fields ?? [], deliveries: 1 })),
          end: bytes.length,
        });
        for (let cut = 0; cut < bytes.length; cut++) {
          expect(typeof decodeReadReply(bytes.subarray(0, cut))).toBe('symbol');
        }
      }),
      { numRuns: 300 },
    );
  });

  it('goes on from where the bytes ran out, as a reply arrives in several reads', () => {
    fc.assert(
      fc.property(
        fc.array(entryArb, { maxLength: 8 }),
        fc.array(fc.nat(), { maxLength: 6 }),
        (entries, cuts) => {
          const bytes = encodeReply('bubble:ingest:{0}', entries);
          const decoder = new ReadReplyDecoder();
          const ends = [...new Set(cuts.map((cut) => cut % (bytes.length + 1)))].sort(
            (a, b) => a - b,
          );
          for (const end of ends) {
            if (end < bytes.length)
              expect(typeof decoder.decode(bytes.subarray(0, end))).toBe('symbol');
          }
          expect(decoder.decode(bytes)).toEqual({
            value: entries.map(({ id, fields }) => ({ id, fields: fields ?? [], deliveries: 1 })),
            end: bytes.length,
          });
        },
      ),
      { numRuns: 500 },
    );
  });

  it('decodes a reply fed in chunks with what is decoded let go, as the connection does', () => {
    fc.assert(
      fc.property(
        fc.array(entryArb, { maxLength: 8 }),
        fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 30 }),
        (entries, sizes) => {
          const bytes = encodeReply('bubble:ingest:{0}', entries);
          const decoder = new ReadReplyDecoder();
          let kept = Buffer.alloc(0);
          let at = 0;
          let result: unknown;
          for (let i = 0; result === undefined; i++) {
            const size = sizes[i % sizes.length]!;
            const chunk = bytes.subarray(at, at + size);
            at += chunk.length;
            const data = Buffer.concat([kept, chunk]);
            const decoded = decoder.decode(data);
            if (typeof decoded === 'symbol') {
              expect(at).toBeLessThan(bytes.length);
              kept = Buffer.from(data.subarray(decoder.consumed()));
            } else {
              expect(decoded.end).toBe(data.length);
              result = decoded.value;
            }
          }
          expect(result).toEqual(
            entries.map(({ id, fields }) => ({ id, fields: fields ?? [], deliveries: 1 })),
          );
        },
      ),
      { numRuns: 500 },
    );
  });

  it('reads a null reply (nothing within the block) and an error reply', () => {
    expect(decodeReadReply(Buffer.from('*-1\r\n'))).toEqual({ value: null, end: 5 });
    const error = '-NOGROUP No such key or consumer group\r\n';
    expect(decodeReadReply(Buffer.from(error))).toEqual({
      error: 'NOGROUP No such key or consumer group',
      end: error.length,
    });
    expect(typeof decodeReadReply(Buffer.from('-NOGROUP No such'))).toBe('symbol');
  });

  it('refuses what is not an XREADGROUP reply', () => {
    expect(() => decodeReadReply(Buffer.from(':1\r\n'))).toThrow(/array was expected/);
    expect(() => decodeReadReply(Buffer.from('*2\r\n*-1\r\n*-1\r\n'))).toThrow(/2 streams/);
  });
});
