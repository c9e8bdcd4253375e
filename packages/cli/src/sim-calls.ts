import { call, endpoint, errorMessage, unauthorized, type CallResult } from './remote.js';
import { SIM_REQUEST_TIMEOUT_MS } from './sim-client.js';

/** What a simulation's calls report to it. */
export interface SimCallEvents {
  /** Aborted when the run stops: calls in flight are cut off. */
  readonly signal: AbortSignal;
  fail(message: string): void;
  throttled(): void;
  /** The platform key was refused mid-run. */
  unauthorized(): void;
}

/** `bubble simulate`'s HTTP calls: as the platform (API key) and as a user (a minted JWT). */
export class SimCalls {
  private readonly tokens = new Map<string, string>();

  constructor(
    private readonly base: URL,
    private readonly apiKey: string,
    private readonly keyFrom: string,
    private readonly mint: (user: string, ttlSeconds: number) => Promise<string>,
    private readonly on: SimCallEvents,
  ) {}

  /** A platform call; null when it could not be made (counted as an error, or stopping). */
  async platform(method: string, path: string, body?: unknown): Promise<CallResult | null> {
    try {
      const result = await call(endpoint(this.base, path), {
        method,
        body,
        headers: { 'x-api-key': this.apiKey },
        timeoutMs: SIM_REQUEST_TIMEOUT_MS,
        maxBytes: 64 * 1024,
        signal: this.on.signal,
      });
      if (result.status === 401 || result.status === 403) {
        // The key was good at the start: a changed key ends the run.
        this.on.fail(unauthorized(this.base, result, this.keyFrom).message);
        this.on.unauthorized();
        return null;
      }
      return result;
    } catch (err) {
      if (!this.on.signal.aborted) this.on.fail((err as Error).message);
      return null;
    }
  }

  /** A call with the user's JWT (Authorization header only); true on a 2xx. */
  async asUser(
    method: string,
    path: string,
    user: string,
    ttl: number,
    body?: unknown,
  ): Promise<boolean> {
    try {
      const result = await call(endpoint(this.base, path), {
        method,
        body,
        headers: { authorization: `Bearer ${await this.token(user, ttl)}` },
        timeoutMs: SIM_REQUEST_TIMEOUT_MS,
        maxBytes: 64 * 1024,
        signal: this.on.signal,
      });
      if (result.status === 429 || result.status === 503) {
        this.on.throttled();
        return false;
      }
      if (result.status >= 300) {
        this.on.fail(`${method} /${path}: ${errorMessage(result)}`);
        return false;
      }
      return true;
    } catch (err) {
      if (!this.on.signal.aborted) this.on.fail((err as Error).message);
      return false;
    }
  }

  async token(user: string, ttl: number): Promise<string> {
    let token = this.tokens.get(user);
    if (!token) {
      token = await this.mint(user, ttl);
      if (this.tokens.size >= 20_000) this.tokens.clear();
      this.tokens.set(user, token);
    }
    return token;
  }
}
