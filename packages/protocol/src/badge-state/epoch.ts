import { randomBytes } from 'node:crypto';

const EPOCH_BYTES = 6;
/** Random bytes drawn 512 epochs at a time: a core asks for one per pool per sweep. */
let pool = Buffer.alloc(0);
let offset = 0;

/** A fresh opaque epoch: 8 url-safe characters, new whenever a user's stored state starts over. */
export function newEpoch(): string {
  if (offset + EPOCH_BYTES > pool.length) {
    pool = randomBytes(EPOCH_BYTES * 512);
    offset = 0;
  }
  offset += EPOCH_BYTES;
  return pool.toString('base64url', offset - EPOCH_BYTES, offset);
}

/** Each base64url character's six bits (-1: not one). */
const BASE64URL_DIGITS = (() => {
  const digits = new Int8Array(128).fill(-1);
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  for (let i = 0; i < alphabet.length; i++) digits[alphabet.charCodeAt(i)] = i;
  return digits;
})();

/**
 * text[from, to) as a number when it is an epoch as newEpoch makes them (8 base64url
 * characters, 48 bits: exact in a double), else -1. Two such epochs are equal exactly when
 * their codes are, so a gateway compares the epoch of every routed change with the one it
 * holds as two numbers, without reaching for either string.
 */
export function epochCode(text: string, from: number, to: number): number {
  if (to - from !== EPOCH_CHARS) return -1;
  let code = 0;
  for (let i = from; i < to; i++) {
    const unit = text.charCodeAt(i);
    const digit = unit < 128 ? BASE64URL_DIGITS[unit]! : -1;
    if (digit < 0) return -1;
    code = code * 64 + digit;
  }
  return code;
}

const EPOCH_CHARS = (EPOCH_BYTES / 3) * 4;
