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
