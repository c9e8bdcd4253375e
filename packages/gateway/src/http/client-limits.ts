import type { IncomingMessage } from 'node:http';
import { BubbleError } from '@bubble/protocol';
import type { Authenticator } from '../auth.js';
import { IpRateLimiter, type TakeResult } from '../live/ip-rate-limiter.js';
import { ClientAddressResolver } from './client-address.js';

export interface RateLimit {
  perSecond: number;
  burst: number;
}

export interface ClientLimitOptions {
  /** Client-route requests per user, from the verified token (BUBBLE_CLIENT_USER_RATE/BURST). */
  perUser: RateLimit;
  /** Client-route requests per client address (BUBBLE_CLIENT_ADDRESS_RATE/BURST). */
  perAddress: RateLimit;
  /** Most users, and most addresses, tracked at once (BUBBLE_CLIENT_LIMIT_TRACKED). */
  maxTracked?: number;
}

/**
 * Well above what the SDK asks for (one poll per X-Poll-Interval, at least 1 s, and backing off)
 * and a person clicking reads; per address higher, since many users share a NAT.
 */
export const DEFAULT_CLIENT_LIMITS: ClientLimitOptions = {
  perUser: { perSecond: 5, burst: 40 },
  perAddress: { perSecond: 200, burst: 1000 },
  maxTracked: 100_000,
};

export type ClientLimitName = 'user' | 'address';

/** A 429 that carries its Retry-After (whole seconds, at least 1). */
export class RateLimitedError extends BubbleError {
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super('UB_ERR_RATE_LIMITED', message);
  }
}

/**
 * The limits of the client routes: a token bucket per client address and one per user. Checked
 * before anything else a client route does (no store access, no body read), so a client far
 * above its poll interval costs the others a map lookup per request.
 */
export class ClientLimits {
  private readonly users: IpRateLimiter;
  private readonly addresses: IpRateLimiter;

  constructor(
    options: ClientLimitOptions,
    private readonly clientAddresses: ClientAddressResolver,
    private readonly onRefused: (limit: ClientLimitName) => void = () => {},
  ) {
    const maxAddresses = options.maxTracked ?? DEFAULT_CLIENT_LIMITS.maxTracked;
    this.users = new IpRateLimiter({ ...options.perUser, maxAddresses });
    this.addresses = new IpRateLimiter({ ...options.perAddress, maxAddresses });
  }

  /** Users and addresses tracked now (each table is bounded by `maxTracked`). */
  get tracked(): { users: number; addresses: number } {
    return { users: this.users.size, addresses: this.addresses.size };
  }

  /**
   * The caller's user, once both of its buckets let the request through. The address is
   * counted first, so a flood of bad or stolen tokens from one address is also refused.
   */
  async admit(req: IncomingMessage, auth: Authenticator): Promise<string> {
    const client = this.clientAddresses.resolve(
      req.socket.remoteAddress,
      req.headers['x-forwarded-for'],
    );
    const byAddress = this.addresses.take(client.bucket);
    if (!byAddress.allowed) {
      this.onRefused('address');
      throw new RateLimitedError(
        'too many requests from this address',
        byAddress.retryAfterSeconds,
      );
    }
    const user = await auth.requireUser(req);
    const byUser = this.users.take(user);
    if (!byUser.allowed) {
      this.onRefused('user');
      throw new RateLimitedError(
        'too many requests for this user; poll at X-Poll-Interval',
        byUser.retryAfterSeconds,
      );
    }
    return user;
  }

  /**
   * Charges one store-touching WebSocket frame (a `read`, a `watch`) to the user's bucket, the
   * one their HTTP calls draw from: a socket is no way around the per-user limit.
   */
  takeFrame(user: string): TakeResult {
    const byUser = this.users.take(user);
    if (!byUser.allowed) this.onRefused('user');
    return byUser;
  }
}
