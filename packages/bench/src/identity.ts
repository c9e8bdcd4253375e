import { createHmac } from 'node:crypto';

/**
 * An end-user token as `bubble token` mints it: HS256 over the secret's UTF-8 bytes, `sub`,
 * `iat` and `exp` (node:crypto rather than jose, to mint tens of thousands quickly).
 */
export function mintJwt(secret: string, user: string, ttlSeconds: number, nowMs = Date.now()) {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const iat = Math.floor(nowMs / 1000);
  const header = part({ alg: 'HS256', typ: 'JWT' });
  const signed = `${header}.${part({ sub: user, iat, exp: iat + ttlSeconds })}`;
  return `${signed}.${createHmac('sha256', secret).update(signed).digest('base64url')}`;
}

/**
 * A local source address for connection `index`, `perAddress` connections per address
 * (127.1.0.1, 127.1.0.2, …: all of 127/8 is loopback on Linux). Clients from many addresses are
 * what a gateway sees in production; its per-address new-connection limiter stays as it is.
 */
export function sourceAddress(index: number, perAddress: number): string {
  const k = Math.floor(index / perAddress);
  return `127.1.${Math.floor(k / 250) % 250}.${(k % 250) + 1}`;
}

/** Milliseconds on a clock every process of the machine shares (wall clock, sub-ms). */
export function wallNow(): number {
  return performance.timeOrigin + performance.now();
}
