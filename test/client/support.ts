/**
 * A small gateway speaking docs/protocol.md for one user — WebSocket on /v1/ws (first-frame auth),
 * GET /v1/badge with ETag / If-None-Match / X-Poll-Interval, POST /v1/badge/read — on a real
 * node:http server with the `ws` package, plus recording timers, so the SDK is driven over real
 * sockets with deterministic delays.
 */
import http, { type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  BubbleClient,
  type Badge,
  type BubbleClientOptions,
  type ClientEvents,
  type Timers,
} from '@bubble/client';
import { CLOSE } from '@bubble/protocol';
import { afterEach, beforeEach } from 'vitest';
import WebSocket, { WebSocketServer } from 'ws';

export const GOOD = 'token-good';

export function makeBadge(epoch: string, version: number, feed = version): Badge {
  return {
    user: 'alice',
    epoch,
    version,
    feed,
    notices: 0,
    conversations: {},
    conversationsTotal: 0,
    reddots: [],
    total: feed,
    display: `${feed}`,
    computedAt: 1_700_000_000_000 + version,
  };
}

/**
 * The rig of the SDK's unit tests, registered in the calling file: a FakeGateway per test, and
 * `connect` for a client on it with the `ws` package's WebSocket, no pings and a connect that
 * does not time out (plus `defaults`, then `options`); both are closed after each test.
 */
export function useFakeGateway(defaults: Partial<BubbleClientOptions> = {}): {
  readonly gw: FakeGateway;
  connect(timers: TestTimers, options?: Partial<BubbleClientOptions>): BubbleClient;
} {
  let gw: FakeGateway | undefined;
  let client: BubbleClient | undefined;
  beforeEach(async () => {
    gw = await FakeGateway.start();
  });
  afterEach(async () => {
    client?.close();
    client = undefined;
    await gw?.close();
  });
  const current = (): FakeGateway => {
    if (!gw) throw new Error('the fake gateway only runs inside a test');
    return gw;
  };
  return {
    get gw() {
      return current();
    },
    connect(timers, options = {}) {
      client = new BubbleClient({
        url: current().url,
        token: GOOD,
        WebSocket,
        timers,
        pingIntervalMs: 0,
        connectTimeoutMs: 600_000,
        ...defaults,
        ...options,
      });
      return client;
    },
  };
}

export interface SocketRecord {
  ws: WebSocket;
  url: string;
  headers: IncomingHttpHeaders;
  frames: Record<string, unknown>[];
  authed: boolean;
  /** The close code the server saw, once closed. */
  closeCode?: number;
}

export interface RequestRecord {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body?: unknown;
  status: number;
  /** Date.now() when the request arrived. */
  at: number;
}

export class FakeGateway {
  url = '';
  badge = makeBadge('E1', 1);
  readonly tokens = new Set([GOOD]);
  /** How many of the next upgrades to refuse with `upgradeStatus` (Infinity: all of them). */
  refuseUpgrades = 0;
  upgradeStatus = 503;
  /** Close code sent right after a socket opens, instead of serving it (e.g. 4403). */
  closeOnOpen: number | undefined;
  /** X-Poll-Interval, in seconds. */
  pollInterval = 1;
  /** Answers given to the next GET /v1/badge requests instead of the badge. */
  readonly pollOverrides: { status: number; retryAfter?: number }[] = [];
  /** Whether `read` frames are answered (with a badge, or `readError` as an error frame). */
  answerReads = true;
  readError: { code: string; message: string } | undefined;
  answerPings = true;
  /** Accept sockets and never answer them. */
  silent = false;
  upgrades = 0;
  readonly sockets: SocketRecord[] = [];
  readonly requests: RequestRecord[] = [];

  private readonly server = http.createServer((req, res) => void this.onRequest(req, res));
  private readonly wss = new WebSocketServer({ noServer: true });

  static async start(): Promise<FakeGateway> {
    const gateway = new FakeGateway();
    gateway.server.on('upgrade', (req, socket, head) => {
      gateway.upgrades++;
      // A client closed mid-attempt resets the connection: not an error of the rig.
      socket.on('error', () => undefined);
      if (gateway.refuseUpgrades > 0 || req.url !== '/v1/ws') {
        gateway.refuseUpgrades--;
        socket.end(`HTTP/1.1 ${gateway.upgradeStatus} Refused\r\nConnection: close\r\n\r\n`);
        return;
      }
      gateway.wss.handleUpgrade(req, socket, head, (ws) => gateway.onSocket(ws, req));
    });
    await new Promise<void>((resolve) => gateway.server.listen(0, '127.0.0.1', resolve));
    gateway.url = `http://127.0.0.1:${(gateway.server.address() as AddressInfo).port}`;
    return gateway;
  }

  /** Sockets that authenticated and are still open. */
  get open(): SocketRecord[] {
    return this.sockets.filter((s) => s.authed && s.closeCode === undefined);
  }

  /** Moves the badge to a new version (or `epoch`) and pushes it to every open socket. */
  bump(changes: { feed?: number; epoch?: string } = {}): Badge {
    const epoch = changes.epoch ?? this.badge.epoch;
    const version = epoch === this.badge.epoch ? this.badge.version + 1 : 1;
    this.badge = makeBadge(epoch, version, changes.feed ?? this.badge.feed);
    this.push(this.badge);
    return this.badge;
  }

  /** Sends a badge frame as is to every open socket (stale ones included). */
  push(badge: Badge): void {
    for (const s of this.open) s.ws.send(JSON.stringify({ type: 'badge', badge }));
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.ws.terminate();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private onSocket(ws: WebSocket, req: http.IncomingMessage): void {
    const record: SocketRecord = {
      ws,
      url: req.url ?? '',
      headers: req.headers,
      frames: [],
      authed: false,
    };
    this.sockets.push(record);
    ws.on('close', (code) => (record.closeCode = code));
    if (this.closeOnOpen !== undefined) {
      ws.close(this.closeOnOpen);
      return;
    }
    ws.on('message', (data) => {
      if (this.silent) return;
      let frame: Record<string, unknown>;
      try {
        frame = JSON.parse(String(data)) as Record<string, unknown>;
      } catch {
        ws.close(CLOSE.policy);
        return;
      }
      record.frames.push(frame);
      if (!record.authed) {
        if (frame.type !== 'auth' || !this.tokens.has(frame.token as string)) {
          ws.close(CLOSE.authFailed);
          return;
        }
        record.authed = true;
        ws.send(JSON.stringify({ type: 'badge', badge: this.badge }));
      } else if (frame.type === 'ping') {
        if (this.answerPings) ws.send('{"type":"pong"}');
      } else if (frame.type === 'read') {
        if (!this.answerReads) return;
        if (this.readError) ws.send(JSON.stringify({ type: 'error', ...this.readError }));
        else this.bump({ feed: 0 });
      } else {
        ws.close(CLOSE.policy);
      }
    });
  }

  private async onRequest(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const at = Date.now();
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString();
    const record: RequestRecord = {
      method: req.method ?? '',
      path: req.url ?? '',
      headers: req.headers,
      body: text ? (JSON.parse(text) as unknown) : undefined,
      status: 0,
      at,
    };
    this.requests.push(record);
    const answer = (status: number, body?: unknown, headers: Record<string, string> = {}): void => {
      record.status = status;
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(body === undefined ? undefined : JSON.stringify(body));
    };
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    if (!token || !this.tokens.has(token)) {
      answer(401, { error: { code: 'UB_ERR_UNAUTHORIZED', message: 'bad token' } });
      return;
    }
    const etag = `"${this.badge.epoch}.${this.badge.version}"`;
    const poll = { etag, 'x-poll-interval': String(this.pollInterval) };
    if (req.method === 'GET' && req.url === '/v1/badge') {
      const override = this.pollOverrides.shift();
      if (override) {
        const headers: Record<string, string> = {};
        if (override.retryAfter !== undefined) headers['retry-after'] = String(override.retryAfter);
        answer(
          override.status,
          { error: { code: 'UB_ERR_UNAVAILABLE', message: 'overloaded' } },
          headers,
        );
      } else if (req.headers['if-none-match'] === etag) answer(304, undefined, poll);
      else answer(200, this.badge, poll);
    } else if (req.method === 'POST' && req.url === '/v1/badge/read') {
      const body = record.body as { scope?: unknown } | undefined;
      if (body?.scope === 'conversation') {
        answer(403, { error: { code: 'UB_ERR_FORBIDDEN', message: 'not a member (HTTP)' } });
        return;
      }
      answer(200, this.bump({ feed: 0 }));
    } else {
      answer(404, { error: { code: 'UB_ERR_NOT_FOUND', message: 'no route' } });
    }
  }
}

/**
 * Timers that record every delay asked for and run it `scale` times as fast. `pending` counts
 * timers set and neither run nor cleared, so a test can see that a client stopped scheduling.
 */
export class TestTimers implements Timers {
  readonly delays: number[] = [];
  private readonly live = new Set<ReturnType<typeof setTimeout>>();

  constructor(private readonly scale: number) {}

  setTimeout(callback: () => void, ms: number): unknown {
    this.delays.push(ms);
    const handle = setTimeout(() => {
      this.live.delete(handle);
      callback();
    }, ms * this.scale);
    this.live.add(handle);
    return handle;
  }

  clearTimeout(handle: unknown): void {
    clearTimeout(handle as ReturnType<typeof setTimeout>);
    this.live.delete(handle as ReturnType<typeof setTimeout>);
  }

  get pending(): number {
    return this.live.size;
  }
}

/**
 * A `random` that returns `values` in turn (the last one forever), or draws from `values` when it
 * is a function, and notes which timer each draw was for: the client draws exactly once per
 * backoff, right before setting its timer, so `backoffs()` are the reconnection delays it chose.
 */
export function drawing(timers: TestTimers, values: number[] | (() => number)) {
  const draws: { value: number; timer: number }[] = [];
  const random = (): number => {
    const value =
      typeof values === 'function'
        ? values()
        : (values[Math.min(draws.length, values.length - 1)] ?? 0);
    draws.push({ value, timer: timers.delays.length });
    return value;
  };
  const backoffs = (): { value: number; delay: number }[] =>
    draws.map((d) => ({ value: d.value, delay: timers.delays[d.timer] ?? NaN }));
  return { random, backoffs, draws };
}

/** Resolves once `predicate` holds, checked every 2 ms; fails after `ms` naming `what`. */
export async function until(predicate: () => boolean, what: string, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

/** The next `type` event whose value passes `predicate`, or a failure after `ms`. */
export function next<K extends keyof ClientEvents>(
  client: BubbleClient,
  type: K,
  predicate: (value: ClientEvents[K]) => boolean = () => true,
  ms = 5_000,
): Promise<ClientEvents[K]> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      off();
      reject(new Error(`timed out after ${ms} ms waiting for a ${String(type)} event`));
    }, ms);
    const off = client.on(type, (value) => {
      if (!predicate(value)) return;
      clearTimeout(timer);
      off();
      resolve(value);
    });
  });
}

/** Records every event of a client, in order. */
export function record(client: BubbleClient) {
  const states: string[] = [];
  const badges: Badge[] = [];
  const errors: ClientEvents['error'][] = [];
  client.on('state', (s) => states.push(s));
  client.on('badge', (b) => badges.push(b));
  client.on('error', (e) => errors.push(e));
  return { states, badges, errors };
}
