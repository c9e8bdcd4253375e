/**
 * The client side of the live-badge tests: real `ws` sockets that record every frame they
 * receive, checks on their badges and on refused upgrades, and small helpers of those tests.
 */
import { randomBytes } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { type Badge } from '@bubble/protocol';
import { waitFor } from '@bubble/test-utils';
import { expect } from 'vitest';
import { WebSocket, type RawData } from 'ws';
import type { UpgradeResult } from '../support/ws-upgrade.js';
import { tokenFor, type LiveApp } from './support.js';

// ------------------------------------------------------------------------------ sockets

export type ServerFrame =
  | { type: 'badge'; badge: Badge }
  | { type: 'error'; code: string; message: string }
  | { type: 'pong' }
  | { type: 'conversations'; items: Array<Record<string, unknown> & { id: string }> };

export interface ConnectOptions {
  /** Sent as `Authorization: Bearer <token>` on the upgrade. */
  token?: string;
  headers?: Record<string, string>;
  /** A distinct source address (127.0.0.x) gets its own per-IP connection budget. */
  localAddress?: string;
  /** Another URL of the same gateway's /v1/ws (e.g. LiveApp.unixWsUrl()). */
  url?: string;
  /** false: never answer the server's protocol pings (a peer that died without closing). */
  autoPong?: boolean;
}

/** One real `ws` client socket and everything it received. */
export class Client {
  readonly frames: ServerFrame[] = [];
  /** The badges among `frames`, in order. */
  readonly badges: Badge[] = [];
  /** Frames that were not one JSON object of a known type (none should ever arrive). */
  readonly malformed: string[] = [];
  readonly errors: Error[] = [];
  closed: { code: number; reason: string } | null = null;
  unexpected: { status: number; body: string } | null = null;
  readonly opened: Promise<void>;
  private pongs = 0;
  /** `read` frames sent: each may be answered with a badge the socket already has. */
  readsSent = 0;
  private readonly waiters = new Set<() => void>();

  constructor(
    readonly ws: WebSocket,
    readonly label = 'client',
  ) {
    ws.on('message', (data: RawData, isBinary: boolean) => this.onMessage(data, isBinary));
    ws.on('close', (code: number, reason: Buffer) => {
      this.closed = { code, reason: reason.toString() };
    });
    ws.on('error', (err: Error) => this.errors.push(err));
    let refused: (err: Error) => void = () => {};
    ws.on('unexpected-response', (req, res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => {
        this.unexpected = { status: res.statusCode ?? 0, body };
        req.destroy();
        refused(new Error(`${label}: the upgrade was answered ${res.statusCode}: ${body}`));
      });
    });
    this.opened = new Promise<void>((resolve, reject) => {
      refused = reject;
      ws.once('open', () => resolve());
      ws.once('close', () => reject(new Error(`${label} closed before opening`)));
      ws.once('error', reject);
    });
    // Rejections are observed by whoever awaits; never leave one unhandled.
    this.opened.catch(() => {});
  }

  static open(app: LiveApp, options: ConnectOptions = {}, label?: string): Client {
    const headers: Record<string, string> = { ...options.headers };
    if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
    const ws = new WebSocket(options.url ?? app.wsUrl, {
      headers,
      perMessageDeflate: false,
      ...(options.localAddress ? { localAddress: options.localAddress } : {}),
      ...(options.autoPong === false ? { autoPong: false } : {}),
    });
    return new Client(ws, label);
  }

  get lastBadge(): Badge | undefined {
    return this.badges.at(-1);
  }

  get isOpen(): boolean {
    return this.ws.readyState === WebSocket.OPEN;
  }

  send(frame: unknown): void {
    if ((frame as { type?: unknown } | null)?.type === 'read') this.readsSent++;
    this.ws.send(typeof frame === 'string' ? frame : JSON.stringify(frame));
  }

  /**
   * The first badge (at or after index `from`) matching `predicate`: checked on every frame as
   * it arrives, failing at the deadline.
   */
  waitBadge(
    predicate: (badge: Badge) => boolean,
    options: { from?: number; timeoutMs?: number; message?: string } = {},
  ): Promise<Badge> {
    const from = options.from ?? 0;
    let next = from;
    const find = () => {
      for (; next < this.badges.length; next++) {
        const badge = this.badges[next]!;
        if (predicate(badge)) return badge;
      }
      return undefined;
    };
    const found = find();
    if (found) return Promise.resolve(found);
    const timeoutMs = options.timeoutMs ?? 10_000;
    return new Promise<Badge>((resolve, reject) => {
      const check = () => {
        const badge = find();
        if (!badge) return;
        this.waiters.delete(check);
        clearTimeout(timer);
        resolve(badge);
      };
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        const seen = this.badges.slice(-20).map((b) => [b.feed, b.version]);
        reject(
          new Error(
            `${this.label}: ${options.message ?? 'no matching badge'} within ${timeoutMs} ms ` +
              `(last badges [feed, version]: ${JSON.stringify(seen)}, closed: ${JSON.stringify(this.closed)})`,
          ),
        );
      }, timeoutMs);
      this.waiters.add(check);
    });
  }

  async waitClose(timeoutMs = 10_000): Promise<{ code: number; reason: string }> {
    const closed = await waitFor(() => this.closed, {
      timeoutMs,
      intervalMs: 5,
      message: `${this.label} was not closed`,
    });
    return closed!;
  }

  /**
   * Sends `{"type":"ping"}` and waits for the pong: every frame the server sent before it
   * handled the ping has arrived by then.
   */
  async roundTrip(timeoutMs = 5000): Promise<void> {
    const before = this.pongs;
    this.send({ type: 'ping' });
    await waitFor(() => this.pongs > before || this.closed, {
      timeoutMs,
      intervalMs: 5,
      message: `${this.label}: no pong`,
    });
    if (this.pongs <= before) throw new Error(`${this.label} closed before its pong`);
  }

  close(): void {
    this.ws.close();
  }

  private onMessage(data: RawData, isBinary: boolean): void {
    const text = Buffer.isBuffer(data)
      ? data.toString('utf8')
      : Buffer.from(data as ArrayBuffer).toString();
    let frame: unknown;
    try {
      if (isBinary) throw new Error('binary');
      frame = JSON.parse(text);
    } catch {
      this.malformed.push(text);
      return;
    }
    const type = (frame as { type?: unknown } | null)?.type;
    if (type === 'pong') this.pongs++;
    if (type !== 'badge' && type !== 'error' && type !== 'pong' && type !== 'conversations') {
      this.malformed.push(text);
      return;
    }
    this.frames.push(frame as ServerFrame);
    if (type === 'badge') this.badges.push((frame as { badge: Badge }).badge);
    for (const waiter of [...this.waiters]) waiter();
  }
}

/** Opens an authenticated socket (header) and waits for its first badge. */
export async function connect(
  app: LiveApp,
  user: string,
  label = user,
  options: Omit<ConnectOptions, 'token'> = {},
): Promise<Client> {
  const client = Client.open(app, { ...options, token: await tokenFor(user) }, label);
  await client.opened;
  await client.waitBadge((b) => b.user === user, { message: 'no badge after authenticating' });
  return client;
}

/**
 * Runs `change`, then waits (up to `timeoutMs`) until every socket got a badge, after the ones
 * it had, whose `view` deep-equals `want`; the badge each socket got.
 */
export async function expectPushed<T>(
  sockets: Client[],
  what: string,
  change: () => Promise<unknown>,
  view: (badge: Badge) => T,
  want: T,
  timeoutMs: number,
): Promise<Badge[]> {
  const from = sockets.map((s) => s.badges.length);
  await change();
  return Promise.all(
    sockets.map((s, i) =>
      s.waitBadge((badge) => isDeepStrictEqual(view(badge), want), {
        from: from[i],
        timeoutMs,
        message: `no push after ${what} (want ${JSON.stringify(want)}; last ${JSON.stringify(
          s.lastBadge && view(s.lastBadge),
        )})`,
      }),
    ),
  );
}

/**
 * docs/protocol.md: on one connection the server never sends a lower version than one it
 * already sent in the same epoch. Pushes never repeat a version either, so on a socket that
 * sends no reads the versions strictly increase within an epoch; a read is answered even when
 * its badge was just pushed, so a reading socket may get the same badge again, at most once
 * per read it sent.
 */
export function expectVersionsIncrease(client: Client): void {
  let previous: Badge | undefined;
  let repeats = 0;
  const history = () => JSON.stringify(client.badges.map((b) => [b.epoch, b.version, b.feed]));
  for (const badge of client.badges) {
    if (previous && badge.epoch === previous.epoch) {
      if (badge.version === previous.version) {
        repeats++;
        // (computedAt may differ: a read stamps its own time on a state a core already wrote)
        const { computedAt: _a, ...counts } = badge;
        const { computedAt: _b, ...before } = previous;
        expect(counts, `${client.label}: a repeated version with other counts`).toEqual(before);
      } else if (badge.version < previous.version) {
        // (the message is built only on failure: histories run to tens of thousands)
        expect.fail(
          `${client.label}: version ${badge.version} after ${previous.version}: ${history()}`,
        );
      }
    }
    previous = badge;
  }
  if (repeats > client.readsSent) {
    expect.fail(
      `${client.label}: ${repeats} repeated versions for ${client.readsSent} reads: ${history()}`,
    );
  }
}

// ------------------------------------------------------------------------- raw upgrades

export { rawUpgrade, type UpgradeResult } from '../support/ws-upgrade.js';

/** Asserts a refused upgrade: `status`, JSON `{"error":{"code","message"}}`, never a 101. */
export function expectRefused(result: UpgradeResult, status: number, code: string): void {
  expect(result.status, result.body).toBe(status);
  expect(result.headers['content-type'] ?? '').toMatch(/^application\/json/);
  const body = JSON.parse(result.body) as { error?: { code?: unknown; message?: unknown } };
  expect(Object.keys(body)).toEqual(['error']);
  expect(body.error?.code).toBe(code);
  expect(typeof body.error?.message).toBe('string');
}

let addressCounter = 0;
/** A fresh 127.a.b.c source address, never 127.0.0.1 (Linux routes all of 127/8 to lo). */
export function nextLocalAddress(): string {
  addressCounter++;
  const b = Math.floor(addressCounter / 254) % 256;
  const c = (addressCounter % 254) + 1;
  return `127.${1 + (process.pid % 200)}.${b}.${c}`;
}

/** Collects what reaches process-level error handlers while `body` runs. */
export async function collectProcessErrors<T>(
  body: (errors: unknown[]) => Promise<T>,
): Promise<{ result: T; errors: unknown[] }> {
  const errors: unknown[] = [];
  const onRejection = (reason: unknown) => errors.push(reason);
  const onException = (err: unknown) => errors.push(err);
  process.on('unhandledRejection', onRejection);
  process.on('uncaughtException', onException);
  try {
    const result = await body(errors);
    return { result, errors };
  } finally {
    process.off('unhandledRejection', onRejection);
    process.off('uncaughtException', onException);
  }
}

export function ms(start: number): number {
  return Date.now() - start;
}

/** Distinct ids per test run, so tests sharing a store never collide. */
export function ids(prefix: string, n: number): string[] {
  const tag = randomBytes(2).toString('hex');
  return Array.from({ length: n }, (_, i) => `${prefix}${i}-${tag}`);
}
