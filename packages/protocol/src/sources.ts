/**
 * The platform's sources endpoint (docs/api.md, "Sources endpoint"): what it answers for one
 * user, and how the badges layer asks for it. The HTTP client (events/src/sources/) implements
 * SourcesFetcher; the store installs answers (store/src/follows/user-sources.ts).
 */

/** One user's entry of an answer, checked against the id grammar and the caps. */
export interface SourcesAnswer {
  follows: string[];
  topics: string[];
  /** The platform's own last feed visit (ms): used only where bubble holds no feed cursor. */
  readAt?: number;
  /** The platform's own last seen notice id: used only where bubble holds no notice cursor. */
  noticesSeen?: number;
}

/**
 * Why a user's sources could not be had: `unreachable` (timeout, refused, 5xx, a non-2xx),
 * `invalid` (their entry broke the grammar or the caps; the rest of the answer stands),
 * `paused` (the circuit breaker is open: no request was sent).
 */
export type SourcesFailure = 'unreachable' | 'invalid' | 'paused';

export type SourcesOutcome =
  { ok: true; answer: SourcesAnswer } | { ok: false; reason: SourcesFailure };

export interface SourcesFetchOptions {
  /**
   * Wall-clock ms (Date.now()) after which no retry starts: a cold start waits at most about
   * one timeout; a core's background load passes none and retries with backoff until the
   * breaker pauses the endpoint.
   */
  deadline?: number;
}

export interface SourcesFetcher {
  /**
   * Each of `users`' sources, in one entry per distinct user. Concurrent fetches of one user
   * share one request; users are batched up to 100 a request. Never rejects.
   */
  fetch(
    users: readonly string[],
    options?: SourcesFetchOptions,
  ): Promise<Map<string, SourcesOutcome>>;
}
