/**
 * The client routes' limits (ClientLimits, over the IpRateLimiter the WebSocket upgrades use):
 * the address is counted before the token is verified, the user after; and under floods of
 * 100k+ distinct addresses or users neither table grows past its bound.
 */
import type { IncomingMessage } from 'node:http';
import { Authenticator, ClientAddressResolver, mintToken, parseCidrList } from '@bubble/gateway';
import { BubbleError } from '@bubble/protocol';
import { describe, expect, it } from 'vitest';
import {
  ClientLimits,
  DEFAULT_CLIENT_LIMITS,
  RateLimitedError,
  type ClientLimitName,
} from '../../packages/gateway/src/http/client-limits.js';
import { IpRateLimiter } from '../../packages/gateway/src/live/ip-rate-limiter.js';

const SECRET = 'unit-client-limits-secret-0123456789';
const auth = new Authenticator({ apiKey: 'k', jwtSecret: SECRET });
const SLOW = { perSecond: 0.01, burst: 2 };
const LOOSE = { perSecond: 1_000_000, burst: 1_000_000 };

/** What ClientLimits reads of a request: the peer and two headers. */
function request(headers: Record<string, string>, peer = '127.0.0.1'): IncomingMessage {
  return { socket: { remoteAddress: peer }, headers } as unknown as IncomingMessage;
}

async function outcome(promise: Promise<string>): Promise<string> {
  try {
    return `ok ${await promise}`;
  } catch (err) {
    if (err instanceof RateLimitedError) return `429 ${err.retryAfterSeconds}`;
    if (err instanceof BubbleError) return err.code;
    throw err;
  }
}

describe('ClientLimits', () => {
  it('counts the address first (also for a bad token), then the user', async () => {
    const refused: ClientLimitName[] = [];
    const limits = new ClientLimits(
      { perUser: SLOW, perAddress: { perSecond: 0.01, burst: 4 } },
      new ClientAddressResolver(),
      (limit) => refused.push(limit),
    );
    const bearer = {
      authorization: `Bearer ${await mintToken({ secret: SECRET, user: 'ann', ttlSeconds: 600 })}`,
    };
    expect(await outcome(limits.admit(request(bearer), auth))).toBe('ok ann');
    expect(await outcome(limits.admit(request(bearer), auth))).toBe('ok ann');
    expect(await outcome(limits.admit(request(bearer), auth))).toBe('429 100');
    expect(await outcome(limits.admit(request({ authorization: 'Bearer x' }), auth))).toBe(
      'UB_ERR_UNAUTHORIZED',
    );
    // The address's four tokens are spent: refused before the token is looked at.
    expect(await outcome(limits.admit(request({}), auth))).toBe('429 100');
    // Another address, the same user: still the user's empty bucket.
    expect(await outcome(limits.admit(request(bearer, '192.0.2.1'), auth))).toBe('429 100');
    expect(refused).toEqual(['user', 'address', 'user']);
  });

  it('the per-user default lets a person clicking and four tabs polling at the fastest interval (1 s) through', () => {
    const now = 1_000_000;
    const users = new IpRateLimiter(DEFAULT_CLIENT_LIMITS.perUser, now);
    // A burst of 30 clicks at once, then four tabs each polling once a second for a minute.
    for (let i = 0; i < 30; i++) expect(users.take('tabs', now).allowed).toBe(true);
    for (let second = 1; second <= 60; second++)
      for (let tab = 0; tab < 4; tab++)
        expect(users.take('tabs', now + second * 1000).allowed).toBe(true);
    // Fifty a second is not.
    let refusedAt = -1;
    for (let i = 0; i < 200 && refusedAt < 0; i++)
      if (!users.take('tabs', now + 61_000 + i * 20).allowed) refusedAt = i;
    expect(refusedAt).toBeGreaterThan(0);
  });

  it('holds at most maxTracked of 120k distinct addresses', async () => {
    const maxTracked = 50_000;
    const limits = new ClientLimits(
      { perUser: LOOSE, perAddress: SLOW, maxTracked },
      new ClientAddressResolver(parseCidrList('127.0.0.1')),
    );
    let peak = 0;
    const outcomes = new Map<string, number>();
    for (let n = 0; n < 120_000; n++) {
      const address = `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;
      const answer = await outcome(limits.admit(request({ 'x-forwarded-for': address }), auth));
      outcomes.set(answer, (outcomes.get(answer) ?? 0) + 1);
      peak = Math.max(peak, limits.tracked.addresses);
    }
    // Every one of them got its own bucket (no 429), then was refused for having no token.
    expect(outcomes).toEqual(new Map([['UB_ERR_UNAUTHORIZED', 120_000]]));
    expect(peak).toBeGreaterThan(maxTracked / 2);
    expect(peak).toBeLessThanOrEqual(maxTracked);
  }, 60_000);

  it('holds at most maxTracked users: 3000 verified users through 1000 slots, 120k through the table', async () => {
    const limits = new ClientLimits(
      { perUser: SLOW, perAddress: LOOSE, maxTracked: 1000 },
      new ClientAddressResolver(),
    );
    for (let n = 0; n < 3000; n++) {
      const token = await mintToken({ secret: SECRET, user: `user${n}`, ttlSeconds: 600 });
      const reply = await outcome(
        limits.admit(request({ authorization: `Bearer ${token}` }), auth),
      );
      expect(reply).toBe(`ok user${n}`);
      expect(limits.tracked.users).toBeLessThanOrEqual(1000);
    }
    // The user table is this limiter keyed by user id; minting 120k tokens would only be slow.
    const table = new IpRateLimiter({ ...SLOW, maxAddresses: 50_000 }, 0);
    let peak = 0;
    for (let n = 0; n < 120_000; n++) {
      table.take(`user${n}`, n);
      peak = Math.max(peak, table.size);
    }
    expect(peak).toBe(50_000);
  }, 60_000);
});
