import {
  MAX_NUMBER_LENGTH,
  MAX_UTF8_BYTES_PER_UNIT,
  numberLength,
  writeNumber,
  writeText,
} from '../bytes.js';

/**
 * RESP2 requests written byte by byte into a Buffer the caller sized with the bounds below:
 * "*<count>\r\n", then each argument as a bulk string "$<bytes>\r\n<bytes>\r\n". The save path
 * encodes its EVALSHA this way, with no string per argument.
 */

export const CR = 0x0d;
export const LF = 0x0a;
const ASTERISK = 0x2a;
const DOLLAR = 0x24;

/** Room for a "*<count>\r\n" or "$<length>\r\n" header and a bulk string's closing "\r\n". */
export const FRAMING_BOUND = MAX_NUMBER_LENGTH + 5;

/** At most the bytes writeBulkString writes for `text`. */
export function bulkStringBound(text: string): number {
  return MAX_UTF8_BYTES_PER_UNIT * text.length + FRAMING_BOUND;
}

/** "*<count>\r\n": an array of `count` arguments follows. */
export function writeArrayHeader(target: Buffer, pos: number, count: number): number {
  target[pos++] = ASTERISK;
  return writeLineEnd(target, writeNumber(target, pos, count));
}

/** "$<length>\r\n": a bulk string of `length` bytes follows. */
export function writeLengthPrefix(target: Buffer, pos: number, length: number): number {
  target[pos++] = DOLLAR;
  pos = writeNumber(target, pos, length);
  target[pos++] = CR;
  target[pos++] = LF;
  return pos;
}

function writeLineEnd(target: Buffer, pos: number): number {
  target[pos++] = CR;
  target[pos++] = LF;
  return pos;
}

/** A string as a bulk string of its UTF-8 bytes. */
export function writeBulkString(target: Buffer, pos: number, text: string): number {
  const start = pos;
  // Written as if ASCII (one byte a code unit); endBulkString mends the prefix otherwise.
  pos = writeLengthPrefix(target, pos, text.length);
  const end = writeText(target, pos, text);
  if (end - pos !== text.length) return endBulkString(target, start, pos, end, text.length);
  target[end] = CR;
  target[end + 1] = LF;
  return end + 2;
}

/** A number as a bulk string of what String() writes, as ioredis sends a number argument. */
export function writeBulkNumber(target: Buffer, pos: number, value: number): number {
  const start = pos;
  const expected = numberLength(value);
  pos = writeLengthPrefix(target, pos, expected);
  return endBulkString(target, start, pos, writeNumber(target, pos, value), expected);
}

/**
 * Closes a bulk string whose prefix, written at `start`, announced `expected` bytes, and whose
 * bytes run from `bytesAt` to `end`. When they are more (text that was not ASCII) the prefix is
 * rewritten and, if it got longer, the bytes moved up: the room of MAX_UTF8_BYTES_PER_UNIT
 * bytes a code unit leaves space for both.
 */
export function endBulkString(
  target: Buffer,
  start: number,
  bytesAt: number,
  end: number,
  expected: number,
): number {
  const length = end - bytesAt;
  if (length !== expected) {
    const shift = numberLength(length) - numberLength(expected);
    if (shift !== 0) target.copyWithin(bytesAt + shift, bytesAt, end);
    writeLengthPrefix(target, start, length);
    end += shift;
  }
  return writeLineEnd(target, end);
}

/**
 * The EVAL request equivalent to an encoded EVALSHA: its array header, "EVAL" and the script's
 * source in place of "EVALSHA" and the sha, then the same bytes from `bodyAt` (the key count
 * on). What a server without the script is sent instead; it loads the script as it runs it.
 */
export function evalInsteadOfEvalsha(evalsha: Buffer, bodyAt: number, lua: string): Buffer {
  const arrayHeaderEnd = evalsha.indexOf(LF) + 1;
  const head = Buffer.allocUnsafe(arrayHeaderEnd + bulkStringBound('EVAL') + bulkStringBound(lua));
  evalsha.copy(head, 0, 0, arrayHeaderEnd);
  let pos = writeBulkString(head, arrayHeaderEnd, 'EVAL');
  pos = writeBulkString(head, pos, lua);
  return Buffer.concat([head.subarray(0, pos), evalsha.subarray(bodyAt)]);
}

/**
 * Where a core's batches are encoded, off the V8 heap: views into a slab reused once none of
 * its calls is in flight (between sweeps). A sweep's hundred batches are then not a hundred new
 * external buffers, which, kept alive across their round trips and so promoted, made V8 start
 * a full collection every dozen sweeps. The slab grows until it holds a sweep's batches.
 */
export class EncodingSlab {
  private slab = Buffer.allocUnsafeSlow(1 << 20);
  private used = 0;
  private inFlight = 0;

  /** Room for `bound` bytes; the caller then says what it used (claim). */
  reserve(bound: number): Buffer {
    if (this.used + bound > this.slab.length) {
      // The old slab stays alive as long as views of it are in flight.
      this.slab = Buffer.allocUnsafeSlow(Math.max(2 * this.slab.length, 2 * bound));
      this.used = 0;
    }
    return this.slab.subarray(this.used, this.used + bound);
  }

  /** Keeps the first `bytes` of the last reservation until `call` settles. */
  claim<T>(bytes: number, call: Promise<T>): Promise<T> {
    this.used += bytes;
    this.inFlight++;
    return call.finally(() => {
      if (--this.inFlight === 0) this.used = 0;
    });
  }
}
