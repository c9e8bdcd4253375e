import { CLOSE, isNewer, TERMINAL } from './contract.js';
import { Emitter } from './emitter.js';
import { httpError, isBadge } from './responses.js';
import {
  BubbleClientError,
  type Badge,
  type BubbleClientOptions,
  type ClientEvents,
  type ClientState,
  type ConversationChange,
  type FetchLike,
  type FetchResponseLike,
  type ReadBody,
  type Timers,
  type WebSocketConstructor,
  type WebSocketLike,
} from './types.js';

interface Globals {
  WebSocket?: WebSocketConstructor;
  fetch?: FetchLike;
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

interface PendingRead {
  body: ReadBody;
  resolve(badge: Badge): void;
  reject(error: unknown): void;
  timer?: unknown;
}

const list = (urls: string | readonly string[]): string[] =>
  typeof urls === 'string' ? [urls] : [...urls];

/** Entry `i` of a non-empty list, cyclically (the first one for i < 0). */
const pick = (urls: string[], i: number): string => urls[Math.max(i, 0) % urls.length]!;

/**
 * Holds the user's badge up to date: one WebSocket authenticated with a first `auth` frame,
 * reconnected with full-jitter exponential backoff, and `GET /v1/badge` polling after repeated
 * socket failures until a socket authenticates again (docs/protocol.md).
 */
export class BubbleClient extends Emitter<ClientEvents> {
  private readonly options: BubbleClientOptions;
  private readonly bases: string[];
  private readonly wsUrls: string[];
  /** Sockets created so far: the next one goes to URL number `sockets` of the lists, cyclically. */
  private sockets = 0;
  private readonly WS: WebSocketConstructor | undefined;
  private readonly fetch: FetchLike | undefined;
  private readonly timers: Timers;
  private readonly random: () => number;

  private held: Badge | undefined;
  /** Counts badges taken, so an HTTP answer overtaken by another badge cannot switch epochs back. */
  private taken = 0;
  private token: string | undefined;
  /** The token the server last refused; getting it again is final. */
  private refused: string | undefined;
  /** The token sent on the current socket. */
  private sent: string | undefined;

  private running = false;
  /** Bumped on start and stop: asynchronous work of an earlier run is dropped. */
  private run = 0;
  private current: ClientState = 'closed';
  private ws: WebSocketLike | undefined;
  /** The current socket has received its first badge. */
  private authed = false;
  /** A frame arrived since the last ping. */
  private alive = false;
  /** Consecutive socket attempts that ended before their first badge. */
  private failures = 0;
  private polling = false;
  private pollMs: number;
  private reconnectTimer: unknown;
  private socketTimer: unknown;
  private pollTimer: unknown;
  private reads: PendingRead[] = [];
  /** watchConversations() was called: every authenticated socket sends `watch`. */
  private watching = false;
  /** The ids of the list entries the `conversations` events told of. */
  private listed = new Set<string>();
  private listFresh = false;

  constructor(options: BubbleClientOptions) {
    super();
    const g = globalThis as unknown as Globals;
    const WS = options.WebSocket ?? g.WebSocket;
    const fetch = options.fetch ?? g.fetch;
    if (!WS && !fetch) {
      throw new TypeError(
        'BubbleClient: this environment has neither WebSocket nor fetch; pass options.WebSocket (e.g. the "ws" package) and/or options.fetch',
      );
    }
    if (options.token === undefined && !options.getToken) {
      throw new TypeError('BubbleClient: pass options.token or options.getToken');
    }
    this.options = options;
    this.bases = list(options.url).map((url) => url.replace(/\/+$/, '').replace(/^ws/, 'http'));
    this.wsUrls = options.wsUrl
      ? list(options.wsUrl)
      : this.bases.map((base) => base.replace(/^http/, 'ws') + '/v1/ws');
    if (!this.bases.length || !this.wsUrls.length) {
      throw new TypeError('BubbleClient: options.url (or options.wsUrl) lists no URL');
    }
    this.WS = WS;
    this.fetch = fetch && ((url, init) => fetch(url, init));
    this.timers = options.timers ?? {
      setTimeout: (callback, ms) => g.setTimeout(callback, ms),
      clearTimeout: (handle) => g.clearTimeout(handle),
    };
    this.random = options.random ?? Math.random;
    this.pollMs = options.pollIntervalMs ?? 15_000;
  }

  /** The greatest badge received so far. */
  get badge(): Badge | undefined {
    return this.held;
  }

  /**
   * The number the app sets as its icon badge (`badge.total`, undefined before the first badge):
   * the same number offline delivery's push carries (docs/api.md, "Devices in sync"), so the
   * icon agrees whichever of the two set it last.
   */
  get iconBadge(): number | undefined {
    return this.held?.total;
  }

  get state(): ClientState {
    return this.current;
  }

  /** Connects (or polls, without a WebSocket). Does nothing while already started. */
  start(): void {
    if (this.running) return;
    this.running = true;
    this.run++;
    this.failures = 0;
    if (this.WS) void this.connect();
    else this.startPolling();
    this.sync();
  }

  /** Stops every timer and closes the socket with 1000. Idempotent; `start()` starts again. */
  close(): void {
    this.stop();
  }

  /**
   * Marks things read. Over the socket when one is authenticated (resolving with the badge of the
   * next badge frame, or going over HTTP after `readTimeoutMs`), else `POST /v1/badge/read`.
   * Resolves with the greatest badge held once the answer is taken in.
   */
  read(body: ReadBody): Promise<Badge> {
    const ws = this.ws;
    if (!ws || !this.authed) return this.readHttp(body);
    return new Promise<Badge>((resolve, reject) => {
      const pending: PendingRead = { body, resolve, reject };
      pending.timer = this.after(this.options.readTimeoutMs ?? 5_000, () => {
        this.reads = this.reads.filter((r) => r !== pending);
        this.readHttp(body).then(resolve, reject);
      });
      this.reads.push(pending);
      ws.send(JSON.stringify({ type: 'read', ...body }));
    });
  }

  /**
   * Asks for live list updates (`watch`): `conversations` events with the changed entries, on
   * this socket and every later one.
   */
  watchConversations(): void {
    this.watching = true;
    if (this.ws && this.authed) this.sendWatch(this.ws);
  }

  /** The ids of the entries of the list as the `conversations` events told them. */
  get conversationIds(): string[] {
    return [...this.listed];
  }

  private sendWatch(ws: WebSocketLike): void {
    this.listFresh = true;
    ws.send('{"type":"watch","what":"conversations"}');
  }

  private takeList(items: ConversationChange[]): void {
    const changes = [...items];
    if (this.listFresh) {
      // A new socket's first list is all of it: what is held and not in it left meanwhile.
      this.listFresh = false;
      const now = new Set(items.map((i) => i.id));
      for (const id of this.listed) if (!now.has(id)) changes.push({ id, removed: true });
    }
    for (const item of changes) {
      if ('removed' in item) this.listed.delete(item.id);
      else this.listed.add(item.id);
    }
    this.emit('conversations', changes);
  }

  private after(ms: number, callback: () => void): unknown {
    return this.timers.setTimeout(callback, ms);
  }

  private clear(handle: unknown): void {
    if (handle !== undefined) this.timers.clearTimeout(handle);
  }

  private sync(): void {
    const state: ClientState = !this.running
      ? 'closed'
      : this.authed
        ? 'open'
        : this.polling
          ? 'polling'
          : 'connecting';
    if (state !== this.current) {
      this.current = state;
      this.emit('state', state);
    }
  }

  /** Takes a badge if it is newer than the one held: another epoch, or a greater version. */
  private take(badge: Badge): void {
    if (!isNewer(badge, this.held)) return;
    this.held = badge;
    this.taken++;
    this.emit('badge', badge);
  }

  /** Takes a badge from an HTTP answer, unless it is of another epoch and a badge came meanwhile. */
  private takeHttp(badge: Badge, takenBefore: number): void {
    if (this.held && badge.epoch !== this.held.epoch && this.taken !== takenBefore) return;
    this.take(badge);
  }

  /** The token for a new connection: `token` first, then `getToken()` when there is one. */
  private async nextToken(): Promise<string> {
    const { token, getToken } = this.options;
    const next =
      (this.token === undefined && token !== undefined) || !getToken ? token : await getToken();
    if (typeof next !== 'string') throw new TypeError('getToken did not return a string');
    return (this.token = next);
  }

  private async connect(): Promise<void> {
    this.reconnectTimer = undefined;
    const run = this.run;
    let token: string;
    try {
      token = await this.nextToken();
    } catch (cause) {
      if (run !== this.run) return;
      this.emit('error', new BubbleClientError('token', 'getToken failed', { cause }));
      return this.retry(false);
    }
    if (run !== this.run) return;
    if (token === this.refused) return void this.authFailed();
    let ws: WebSocketLike;
    try {
      ws = new this.WS!(pick(this.wsUrls, this.sockets++));
    } catch (cause) {
      this.emit('error', new BubbleClientError('network', 'could not open a WebSocket', { cause }));
      return this.retry(false);
    }
    this.ws = ws;
    this.sent = token;
    this.alive = true;
    ws.onopen = () => ws.send(JSON.stringify({ type: 'auth', token }));
    ws.onmessage = (event) => this.onFrame(ws, event.data);
    ws.onclose = (event) => this.onClose(ws, event.code);
    // Errors are followed by a close; `ws` throws on an error nobody listens to.
    ws.onerror = () => {};
    this.socketTimer = this.after(this.options.connectTimeoutMs ?? 20_000, () => this.drop(ws));
  }

  private onFrame(ws: WebSocketLike, data: unknown): void {
    if (ws !== this.ws) return;
    this.alive = true;
    let frame: {
      type?: unknown;
      badge?: unknown;
      code?: unknown;
      message?: unknown;
      items?: unknown;
    };
    try {
      frame = JSON.parse(String(data)) ?? {};
    } catch {
      return;
    }
    if (frame.type === 'badge' && isBadge(frame.badge)) {
      if (!this.authed) {
        this.authed = true;
        this.failures = 0;
        this.refused = undefined;
        this.clear(this.socketTimer);
        this.stopPolling();
        this.ping(ws);
        this.sync();
        if (this.watching) this.sendWatch(ws);
      }
      this.take(frame.badge);
      const reads = this.reads;
      this.reads = [];
      for (const r of reads) {
        this.clear(r.timer);
        r.resolve(this.held!);
      }
    } else if (frame.type === 'conversations' && Array.isArray(frame.items)) {
      this.takeList(frame.items as ConversationChange[]);
    } else if (frame.type === 'error') {
      const error = new BubbleClientError(String(frame.code), String(frame.message));
      const r = this.reads.shift();
      if (r) {
        this.clear(r.timer);
        r.reject(error);
      } else this.emit('error', error);
    }
  }

  private ping(ws: WebSocketLike): void {
    const ms = this.options.pingIntervalMs ?? 30_000;
    if (ms > 0) {
      this.socketTimer = this.after(ms, () => {
        if (!this.alive) return this.drop(ws);
        this.alive = false;
        ws.send('{"type":"ping"}');
        this.ping(ws);
      });
    }
  }

  /** Gives up on a socket at once (a close handshake may never end on a dead connection). */
  private drop(ws: WebSocketLike): void {
    ws.onopen = ws.onmessage = ws.onclose = null;
    try {
      ws.close();
    } catch {
      // already closing
    }
    this.onClose(ws, 1006);
  }

  /** Forgets the current socket; reads waiting on it go over HTTP. */
  private detach(): void {
    this.ws = undefined;
    this.authed = false;
    this.clear(this.socketTimer);
    const reads = this.reads;
    this.reads = [];
    for (const r of reads) {
      this.clear(r.timer);
      this.readHttp(r.body).then(r.resolve, r.reject);
    }
  }

  private onClose(ws: WebSocketLike, code: number): void {
    if (ws !== this.ws) return;
    const wasOpen = this.authed;
    this.detach();
    if (code === CLOSE.authFailed) this.refused = this.sent;
    const terminal = TERMINAL[code];
    if (terminal) {
      return this.fail(
        new BubbleClientError(terminal, `the server closed the socket with ${code}`, {
          fatal: true,
          closeCode: code,
        }),
      );
    }
    // A socket that was open (a drain's 1001, a dead gateway's 1006): every client of that gateway
    // lost it in the same instant, so the first retry is spread (full jitter) over a window.
    this.retry(
      wasOpen,
      wasOpen ? this.random() * (this.options.reconnectSpreadMs ?? 10_000) : undefined,
    );
  }

  private retry(wasOpen: boolean, delay?: number): void {
    if (!wasOpen) this.failures++;
    if (this.failures >= (this.options.pollAfterFailures ?? 3)) this.startPolling();
    const { backoffBaseMs = 500, backoffMaxMs = 20_000 } = this.options;
    const ms = delay ?? this.random() * Math.min(backoffMaxMs, backoffBaseMs * 2 ** this.failures);
    this.reconnectTimer = this.after(ms, () => void this.connect());
    this.sync();
  }

  /** The server refused the token and no other one came: stops the client. */
  private authFailed(): BubbleClientError {
    const error = new BubbleClientError('auth-failed', 'the server refused the token', {
      fatal: true,
      status: 401,
    });
    this.fail(error);
    return error;
  }

  private fail(error: BubbleClientError): void {
    this.stop();
    this.emit('error', error);
  }

  private stop(): void {
    this.running = false;
    this.run++;
    this.clear(this.reconnectTimer);
    this.stopPolling();
    const ws = this.ws;
    if (ws) {
      ws.onopen = ws.onmessage = ws.onclose = null;
      this.detach();
      try {
        ws.close(1000);
      } catch {
        // already closing
      }
    }
    this.sync();
  }

  private startPolling(): void {
    if (this.polling || !this.fetch) return;
    this.polling = true;
    this.pollTimer = this.after(0, () => void this.poll());
  }

  private stopPolling(): void {
    this.polling = false;
    this.clear(this.pollTimer);
  }

  private async poll(): Promise<void> {
    const run = this.run;
    const takenBefore = this.taken;
    let delay = this.pollMs;
    try {
      const res = await this.http('GET', '/v1/badge');
      if (run !== this.run || !this.polling) return;
      const interval = Number(res.headers.get('x-poll-interval'));
      if (interval > 0) delay = this.pollMs = interval * 1000;
      if (res.status === 200) {
        const badge = await res.json();
        if (isBadge(badge)) this.takeHttp(badge, takenBefore);
      } else if (res.status !== 304) {
        const retryAfter = Number(res.headers.get('retry-after'));
        if (retryAfter > 0) delay = Math.max(delay, retryAfter * 1000);
        this.emit('error', await httpError(res));
      }
    } catch (error) {
      if (run !== this.run) return;
      this.emit('error', new BubbleClientError('network', 'polling failed', { cause: error }));
    }
    if (run === this.run && this.polling)
      this.pollTimer = this.after(delay, () => void this.poll());
  }

  /** One authenticated request; a 401 is retried once with a fresh token. */
  private async http(method: string, path: string, body?: ReadBody): Promise<FetchResponseLike> {
    const fetch = this.fetch;
    if (!fetch) throw new BubbleClientError('unavailable', 'no fetch in this environment');
    let token = this.token ?? (await this.nextToken());
    for (;;) {
      const headers: Record<string, string> = { authorization: `Bearer ${token}` };
      if (body) headers['content-type'] = 'application/json';
      else if (this.held) headers['if-none-match'] = `"${this.held.epoch}.${this.held.version}"`;
      const res = await fetch(pick(this.bases, this.sockets - 1) + path, {
        method,
        headers,
        body: body && JSON.stringify(body),
      });
      if (res.status !== 401) return res;
      this.refused = token;
      const next = await this.nextToken();
      if (next === token) throw this.authFailed();
      token = next;
    }
  }

  private async readHttp(body: ReadBody): Promise<Badge> {
    const takenBefore = this.taken;
    const res = await this.http('POST', '/v1/badge/read', body);
    if (res.status !== 200) throw await httpError(res);
    const badge = await res.json();
    if (!isBadge(badge)) throw new BubbleClientError('bad-response', 'the answer is not a badge');
    this.takeHttp(badge, takenBefore);
    return this.held ?? badge;
  }
}
