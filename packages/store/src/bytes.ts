/**
 * Text and numbers written straight into a Buffer, for the encoders of the save path (a core's
 * sweep writes a hundred thousand states): no intermediate string for the usual ASCII text and
 * small integers.
 */

/** Characters of the longest number String() writes ("-1.7976931348623157e+308"). */
export const MAX_NUMBER_LENGTH = 24;

/** UTF-8 bytes one UTF-16 code unit can take (a surrogate pair takes 4 for its 2). */
export const MAX_UTF8_BYTES_PER_UNIT = 3;

const DIGIT_ZERO = 0x30;
const FIRST_NON_ASCII = 0x80;

/**
 * `text` as UTF-8; returns the position after it. ASCII (every id, key and number here) is
 * copied a code unit a byte; the rest from the first other character goes through Buffer.
 * The caller leaves room for MAX_UTF8_BYTES_PER_UNIT bytes a code unit.
 */
export function writeText(target: Buffer, pos: number, text: string): number {
  const length = text.length;
  for (let i = 0; i < length; i++) {
    const code = text.charCodeAt(i);
    if (code >= FIRST_NON_ASCII) {
      return pos + i + target.write(text.slice(i), pos + i, 'utf8');
    }
    target[pos + i] = code;
  }
  return pos + length;
}

/** A number as String() writes it; small non-negative integers without making the string. */
export function writeNumber(target: Buffer, pos: number, value: number): number {
  // Small integers (every count and version) in int32 arithmetic: a double's % is a call.
  if (!(Number.isInteger(value) && value >= 0 && value <= 0x7fffffff)) {
    return writeText(target, pos, String(value));
  }
  const end = pos + numberLength(value);
  let rest = value | 0;
  for (let p = end - 1; p >= pos; p--) {
    const next = (rest / 10) | 0;
    target[p] = DIGIT_ZERO + rest - next * 10;
    rest = next;
  }
  return end;
}

/** The length of what writeNumber writes (String() of a number is ASCII). */
export function numberLength(value: number): number {
  if (!(Number.isInteger(value) && value >= 0 && value <= 0x7fffffff)) {
    return String(value).length;
  }
  let length = 1;
  for (let rest = value; rest >= 10; rest = (rest / 10) | 0) length++;
  return length;
}
