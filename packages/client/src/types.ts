/**
 * Types of the SDK. Kept local on purpose: the SDK has no runtime dependency and no build
 * reference to the server packages, so the badge object of docs/api.md is restated here.
 */

/** The badge object (docs/api.md); @bubble/protocol's Badge (test/unit/client-contract.test.ts). */
export interface Badge {
  user: string;
  /** Changes only if the server's stored state was lost; another epoch replaces what is held. */
  epoch: string;
  /** Grows with every distinct badge state within an epoch. */
  version: number;
  feed: number;
  notices: number;
  conversations: Record<string, number>;
  conversationsTotal: number;
  reddots: string[];
  /** Interaction counters (`{"mention":2}`), non-zero kinds only; absent when there is none. */
  counters?: Record<string, number>;
  total: number;
  display: string;
  computedAt: number;
}

/**
 * The bodies of `POST /v1/badge/read`, also sent as `{"type":"read",…body}` frames: feed `upTo` a
 * time in ms, notices `upTo` a notice id (a positive integer). @bubble/protocol's ReadRequest
 * (test/unit/client-contract.test.ts).
 */
export type ReadBody =
  | { scope: 'feed'; upTo?: number }
  | { scope: 'all' }
  | { scope: 'notices'; upTo?: number }
  | { scope: 'conversation'; id: string; seq?: number }
  | { scope: 'reddot'; name: string }
  | { scope: 'counter'; kind: string; upTo?: number };

/**
 * `connecting`: no authenticated socket yet (or again); `open`: a socket is authenticated and
 * pushing; `polling`: the socket failed repeatedly, `GET /v1/badge` is polled while the socket is
 * retried in the background; `closed`: not started, `close()`d, or stopped by a terminal error.
 */
export type ClientState = 'connecting' | 'open' | 'polling' | 'closed';

/** Checked bivariantly, so DOM and `ws` handlers (which take richer events) fit. */
type Handler<E> = { bivarianceHack(event: E): void }['bivarianceHack'];

/** What the SDK uses of a WebSocket: the browser's, Node 22's, or the `ws` package's. */
export interface WebSocketLike {
  onopen: Handler<unknown> | null;
  onmessage: Handler<{ data: unknown }> | null;
  onclose: Handler<{ code: number }> | null;
  onerror: Handler<unknown> | null;
  send(data: string): void;
  close(code?: number): void;
}

export type WebSocketConstructor = new (url: string) => WebSocketLike;

/** What the SDK uses of a fetch Response. */
export interface FetchResponseLike {
  status: number;
  headers: { get(name: string): string | null };
  json(): Promise<unknown>;
}

/** What the SDK uses of fetch; the global one fits. */
export type FetchLike = (
  url: string,
  init: { method: string; headers: Record<string, string>; body?: string },
) => Promise<FetchResponseLike>;

/** Timer functions, injectable for tests. Called as methods of the object passed. */
export interface Timers {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export interface BubbleClientOptions {
  /**
   * The gateway's base URL, `http(s)://host[:port][/prefix]`; the socket is `ws(s)://…/v1/ws`.
   * Or several gateways' (no load balancer in front): each socket after the first goes to the
   * next one in the list, round robin, and HTTP calls go to the gateway of the latest socket.
   */
  url: string | readonly string[];
  /**
   * The socket's URL when it is not `<url>/v1/ws` (e.g. long connections served by their own
   * host or port); a list rotates like `url`, HTTP calls still go to `url`.
   */
  wsUrl?: string | readonly string[];
  /** A JWT. Used for the first connection; alone, it is reused for every one. */
  token?: string;
  /**
   * Called for every (re)connection after the first one that `token` covers, and after the
   * server refused a token (4401 / HTTP 401). Returning the refused token again stops the client
   * with an `auth-failed` error.
   */
  getToken?: () => string | Promise<string>;
  /** Defaults to `globalThis.WebSocket`; without one the client only polls. */
  WebSocket?: WebSocketConstructor;
  /** Defaults to `globalThis.fetch`; without one there is no polling and no HTTP read. */
  fetch?: FetchLike;
  /** In [0, 1); defaults to `Math.random`. Draws the reconnection jitter. */
  random?: () => number;
  /** Defaults to the global `setTimeout` / `clearTimeout`. */
  timers?: Timers;
  /** Backoff: the delay before a retry is `random() × min(backoffMaxMs, backoffBaseMs × 2^failures)`. Default 500. */
  backoffBaseMs?: number;
  /**
   * After the loss of an authenticated socket (a drain's 1001, a dead gateway's 1006, …) the first
   * reconnection waits `random() × reconnectSpreadMs`: the clients of one gateway come back spread
   * over this window, not all in the same instant. Default 10 000: the 10k clients of a dead
   * gateway then arrive at about 1,000 a second, what one survivor on a 2-core machine admits;
   * in 5 s they came at twice that, and those refused at its admission bound came back as a
   * second wave.
   */
  reconnectSpreadMs?: number;
  /** Default 20 000. */
  backoffMaxMs?: number;
  /** Consecutive failed socket attempts before polling starts. Default 3. */
  pollAfterFailures?: number;
  /** Poll interval until the server sends `X-Poll-Interval`. Default 15 000. */
  pollIntervalMs?: number;
  /** How long a read sent over the socket waits for its badge before going over HTTP. Default 5 000. */
  readTimeoutMs?: number;
  /**
   * How long a socket may take from opening to its first badge. Default 20 000 (Socket.IO's
   * connection timeout): in a reconnect storm a gateway admits clients in turn, and one that gives
   * up after waiting its turn comes back later and makes the storm longer.
   */
  connectTimeoutMs?: number;
  /** Sends `{"type":"ping"}` this often and drops a socket silent for a whole period. 0 disables. Default 30 000. */
  pingIntervalMs?: number;
}

/** An entry of `GET /v1/conversations` (docs/api.md). */
export interface ConversationEntry {
  id: string;
  unread: number;
  maxSeq: number;
  lastTs: number;
  preview: Record<string, unknown> | null;
  muted: boolean;
}

/** What a `conversations` frame carries: changed entries, and those that left the list. */
export type ConversationChange = ConversationEntry | { id: string; removed: true };

/** The payload of each event. */
export interface ClientEvents {
  /** A newer badge than the one held (greater version in the same epoch, or another epoch). */
  badge: Badge;
  /**
   * After `watchConversations()`: the list entries that changed (`removed: true` for those that
   * left it). After a reconnect the whole list comes again, with the entries that left meanwhile.
   */
  conversations: ConversationChange[];
  state: ClientState;
  error: BubbleClientError;
}

/**
 * Codes: `auth-failed` (the token was refused and no other one came), `origin-refused` (a 4403 close;
 * a disallowed Origin is refused earlier, with HTTP 403 at the upgrade, seen as an abnormal close),
 * `policy-violation` (1008), `frame-too-large` (1009), `token` (getToken threw), `network`
 * (fetch failed), `http` (an unexpected status), `unavailable` (no fetch), `bad-response`,
 * or the server's `UB_ERR_…` code. `fatal` errors have stopped the client.
 */
export class BubbleClientError extends Error {
  override readonly name = 'BubbleClientError';
  readonly code: string;
  readonly fatal: boolean;
  /** The HTTP status, for errors that came from an HTTP answer. */
  readonly status: number | undefined;
  /** The WebSocket close code, for errors that came from a close. */
  readonly closeCode: number | undefined;

  constructor(
    code: string,
    message: string,
    options: { fatal?: boolean; status?: number; closeCode?: number; cause?: unknown } = {},
  ) {
    super(message, { cause: options.cause });
    this.code = code;
    this.fatal = options.fatal ?? false;
    this.status = options.status;
    this.closeCode = options.closeCode;
  }
}
