/**
 * The ingest consumer reads a one-post body without the op table's schema (most entries are
 * one post). It must accept and refuse exactly what the schema does, with the same result.
 */
import { parsePlatformOp } from '@bubble/badges';
import { parseIngestEntry } from '@bubble/events';
import { BubbleError } from '@bubble/protocol';
import fc from 'fast-check';
import { expect, it } from 'vitest';

const idLike = fc.oneof(
  fc.stringMatching(/^[A-Za-z0-9_.:@-]{1,64}$/),
  fc.constantFrom('', 'a b', 'x'.repeat(65), '__proto__', 'é', 'a{b}'),
  fc.integer(),
  fc.constant(null),
);
const tsLike = fc.oneof(
  fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
  fc.constantFrom(-1, 1.5, Number.MAX_SAFE_INTEGER + 1, 2 ** 60, '1', null),
);
const body = fc.oneof(
  fc.record({ author: idLike, id: idLike, ts: tsLike }),
  fc.record({ author: idLike, id: idLike, ts: tsLike }, { requiredKeys: [] }),
  fc.record({ author: idLike, id: idLike, ts: tsLike, extra: fc.integer() }),
  fc.anything(),
);

function outcome(run: () => unknown): unknown {
  try {
    return { ok: run() };
  } catch (err) {
    return { code: err instanceof BubbleError ? err.code : String(err) };
  }
}

it('one-post bodies: the fast path answers as the schema does', () => {
  fc.assert(
    fc.property(body, (value) => {
      const text = JSON.stringify(value) ?? 'null';
      const parsed = JSON.parse(text) as unknown;
      expect(outcome(() => parseIngestEntry(['v', '1', 'op', 'post', 'body', text]))).toEqual(
        outcome(() => parsePlatformOp('post', parsed)),
      );
    }),
    { numRuns: 2000 },
  );
  // A key named like Object.prototype's own is a key like any other: refused as extra.
  const proto = '{"author":"a","id":"p","ts":1,"__proto__":{"x":1}}';
  expect(outcome(() => parseIngestEntry(['v', '1', 'op', 'post', 'body', proto]))).toEqual(
    outcome(() => parsePlatformOp('post', JSON.parse(proto))),
  );
});
