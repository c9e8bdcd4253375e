/**
 * Stream ids, "<ms>-<seq>" as Redis writes them: the positions of the change logs (both
 * engines), and the ids of the ingest stream and its dead letters. Each part is an unsigned
 * 64-bit integer, at most 20 digits.
 */

const STREAM_ID = /^(\d{1,20})-(\d{1,20})$/;

/** A stream id split for comparison. Parts past 2^53 lose precision: compareStreamIds is exact. */
export interface StreamId {
  ms: number;
  seq: number;
}

export function isStreamId(text: string): boolean {
  return STREAM_ID.test(text);
}

/** Throws a RangeError naming `text` when it is not a stream id. */
export function parseStreamId(text: string): StreamId {
  const match = STREAM_ID.exec(text);
  if (!match) throw notAPosition(text);
  return { ms: Number(match[1]), seq: Number(match[2]) };
}

/** The time part of a stream id, in ms. */
export function streamIdMs(text: string): number {
  return parseStreamId(text).ms;
}

/** Throws the RangeError parseStreamId throws, without splitting the id. */
export function checkStreamId(text: string): void {
  if (!STREAM_ID.test(text)) throw notAPosition(text);
}

/** Orders two parsed ids. */
export function compareParsedIds(a: StreamId, b: StreamId): number {
  return a.ms - b.ms || a.seq - b.seq;
}

/** Orders two stream ids, exactly (every 64-bit part). */
export function compareStreamIds(a: string, b: string): number {
  const [aMs, aSeq] = a.split('-').map(BigInt) as [bigint, bigint];
  const [bMs, bSeq] = b.split('-').map(BigInt) as [bigint, bigint];
  if (aMs !== bMs) return aMs < bMs ? -1 : 1;
  return aSeq === bSeq ? 0 : aSeq < bSeq ? -1 : 1;
}

function notAPosition(text: string): RangeError {
  return new RangeError(`${JSON.stringify(text)} is not a log position "<ms>-<seq>"`);
}
