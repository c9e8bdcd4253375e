import { randomBytes } from 'node:crypto';

/** A fresh opaque epoch: 8 url-safe characters, new whenever a user's stored state starts over. */
export function newEpoch(): string {
  return randomBytes(6).toString('base64url');
}
