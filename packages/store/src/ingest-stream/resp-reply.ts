import { CR } from '../redis/resp-writer.js';

/** The reading side of RESP2 for the ingest read connection: what a decoder answers. */

/**
 * Decodes a reply from the bytes received so far (from the reply's start, or from where
 * consumed() said the bytes before were done with).
 */
export interface ReplyDecoder<T> {
  decode(data: Buffer): Decoded<T>;
  /** After an incomplete decode: how many leading bytes are decoded and may be let go. */
  consumed?(): number;
}

export const INCOMPLETE = Symbol('incomplete');

/** A whole reply: its value or its error text, and where it ends. */
export type Decoded<T> =
  typeof INCOMPLETE | { value: T; error?: undefined; end: number } | ErrorReply;

interface ErrorReply {
  value?: undefined;
  error: string;
  end: number;
}

export const STAR = 0x2a;
export const DOLLAR = 0x24;
export const MINUS = 0x2d;
const PLUS = 0x2b;

export const STATUS: ReplyDecoder<string> = { decode: decodeStatus };

/** +OK, or an error reply. */
function decodeStatus(data: Buffer): Decoded<string> {
  const lineEnd = data.indexOf(CR, 1);
  if (lineEnd < 0 || lineEnd + 1 >= data.length) return INCOMPLETE;
  const text = data.toString('utf8', 1, lineEnd);
  if (data[0] === MINUS) return { error: text, end: lineEnd + 2 };
  if (data[0] !== PLUS) throw new Error(`Connection is closed. (unexpected reply ${data[0]})`);
  return { value: text, end: lineEnd + 2 };
}
