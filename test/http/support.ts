/**
 * Helpers for driving an in-process HttpGateway over real HTTP: fetch for ordinary calls, a raw
 * TCP client for what fetch cannot express (lying or absent Content-Length, endless chunked
 * bodies, half-sent headers).
 */
import net from 'node:net';
import { BadgeService, type BadgeRules } from '@bubble/badges';
import { HttpGateway, mintToken, type GatewayOptions } from '@bubble/gateway';
import { ManualClock, type Badge } from '@bubble/protocol';
import { MemoryStore, RedisStore, type BubbleStore } from '@bubble/store';
import {
  startRedisServer,
  uniquePrefix,
  waitFor,
  type RedisServerHandle,
} from '@bubble/test-utils';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect } from 'vitest';
import { httpCall, type CallOptions, type Reply } from '../support/http.js';

export type { Badge } from '@bubble/protocol';
export { call, type CallOptions, type Reply } from '../support/http.js';

export const API_KEY = 'test-api-key-5d0b1c3e9a7f2046d81be35c';
export const JWT_SECRET = 'test-jwt-secret-7f9a2c41e8b3d6a0';
export const MIB = 1024 * 1024;

export interface App {
  url: string;
  port: number;
  gateway: HttpGateway;
  service: BadgeService;
  clock: ManualClock;
  store: BubbleStore;
  close(): Promise<void>;
}

export interface AppOptions {
  rules?: Partial<BadgeRules>;
  jwtAudience?: string;
  gateway?: Partial<
    Pick<GatewayOptions, 'drainTimeoutMs' | 'basePollSeconds' | 'clientLimits' | 'trustedProxies'>
  >;
}

/** A gateway on 127.0.0.1:<ephemeral> over `store`, its clock seeded at the real now. */
export async function startApp(store: BubbleStore, options: AppOptions = {}): Promise<App> {
  // JWT `exp` is checked against the real clock, so the service's clock starts at the real now.
  const clock = new ManualClock(Date.now());
  const service = new BadgeService(store, clock, { followCap: 5, ...options.rules });
  const gateway = new HttpGateway({
    service,
    auth: { apiKey: API_KEY, jwtSecret: JWT_SECRET, jwtAudience: options.jwtAudience },
    logger: pino({ level: 'silent' }),
    ...options.gateway,
  });
  const address = await gateway.listen(0, '127.0.0.1');
  return {
    url: `http://127.0.0.1:${address.port}`,
    port: address.port,
    gateway,
    service,
    clock,
    store,
    close: () => gateway.close(),
  };
}

/**
 * Registers the lifecycle of one engine's apps in the calling describe block: for Redis one
 * redis-server per file (every store under its own key prefix); every app and store started
 * through it closed after each test.
 */
export function useApps(
  engine: 'memory' | 'redis',
  label: string,
): {
  /** A fresh, empty store of the engine. */
  newStore(): BubbleStore;
  /** An app on `store` (a fresh one by default). */
  start(options?: AppOptions, store?: BubbleStore): Promise<App>;
} {
  let redis: RedisServerHandle | undefined;
  const stores: BubbleStore[] = [];
  const apps: App[] = [];
  if (engine === 'redis') {
    beforeAll(async () => {
      redis = await startRedisServer();
    });
    afterAll(async () => {
      await redis?.stop();
    });
  }
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()));
    await Promise.all(stores.splice(0).map((s) => s.close()));
  });
  const newStore = (): BubbleStore =>
    engine === 'memory'
      ? new MemoryStore()
      : new RedisStore({ url: redis!.url, keyPrefix: uniquePrefix(label), pools: 100 });
  return {
    newStore,
    async start(options = {}, store = newStore()) {
      stores.push(store);
      const app = await startApp(store, options);
      apps.push(app);
      return app;
    },
  };
}

/** The app of the running test, once useFreshApp started it. */
export let app: App;

/**
 * useApps for the calling describe block, and before each of its tests a fresh app of the
 * engine, started with `options`, as `app`.
 */
export function useFreshApp(
  engine: 'memory' | 'redis',
  label: string,
  options: AppOptions = {},
): ReturnType<typeof useApps> {
  const apps = useApps(engine, label);
  beforeEach(async () => {
    app = await apps.start(options);
  });
  return apps;
}

/**
 * One describe block per engine, titled `${title} [engine]`, each of its tests on a fresh app
 * labelled `label` (useFreshApp); `body` declares the tests and gets the block's apps.
 */
export function describeOnEachEngine(
  title: string,
  label: string,
  body: (apps: ReturnType<typeof useApps>, engine: 'memory' | 'redis') => void,
): void {
  for (const engine of ['memory', 'redis'] as const) {
    describe(`${title} [${engine}]`, () => body(useFreshApp(engine, label), engine));
  }
}

/** A platform call (X-Api-Key). */
export function platform(
  app: App,
  method: string,
  path: string,
  options: CallOptions = {},
): Promise<Reply> {
  return httpCall(app.url, method, path, { apiKey: API_KEY, ...options });
}

/** An end-user call (Bearer JWT). */
export function client(
  app: App,
  token: string,
  method: string,
  path: string,
  options: CallOptions = {},
): Promise<Reply> {
  return httpCall(app.url, method, path, { token, ...options });
}

export function tokenFor(user: string, ttlSeconds = 600, audience?: string): Promise<string> {
  return mintToken({ secret: JWT_SECRET, user, ttlSeconds, audience });
}

export function parseJson(reply: Reply): unknown {
  expect(reply.headers.get('content-type') ?? '').toMatch(/^application\/json/);
  return JSON.parse(reply.text) as unknown;
}

/** Asserts the status and that the body is exactly {"error":{"code","message"}}. */
export function expectError(reply: Reply | RawResponse, status: number, code: string): void {
  const contentType =
    reply.headers instanceof Headers
      ? reply.headers.get('content-type')
      : reply.headers['content-type'];
  expect({ status: reply.status, text: reply.text }).toMatchObject({ status });
  expect(contentType ?? '').toMatch(/^application\/json/);
  const body = JSON.parse(reply.text) as Record<string, unknown>;
  expect(Object.keys(body)).toEqual(['error']);
  const error = body.error as Record<string, unknown>;
  expect(Object.keys(error).sort()).toEqual(['code', 'message']);
  expect(error.code).toBe(code);
  expect(typeof error.message).toBe('string');
  expect((error.message as string).length).toBeGreaterThan(0);
}

/** The user's badge through the platform route (which never counts as seeing the user). */
export async function platformBadge(app: App, user: string): Promise<Badge> {
  const reply = await platform(app, 'GET', `/v1/users/${user}/badge`);
  expect(reply.status).toBe(200);
  return parseJson(reply) as Badge;
}

export async function follows(app: App, user: string): Promise<string[]> {
  const reply = await platform(app, 'GET', `/v1/users/${user}/follows`);
  expect(reply.status).toBe(200);
  return (parseJson(reply) as { authors: string[] }).authors;
}

// --- raw TCP ---------------------------------------------------------------------------------

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  text: string;
}

/** Parses one complete HTTP/1.1 response with a Content-Length (or none, for 204/304). */
function parseResponse(data: Buffer): (RawResponse & { size: number }) | undefined {
  const end = data.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const [statusLine, ...lines] = data.subarray(0, end).toString('latin1').split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? '')?.[1]);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const length = Number(headers['content-length'] ?? 0);
  const body = data.subarray(end + 4);
  if (body.length < length) return undefined;
  return {
    status,
    headers,
    text: body.subarray(0, length).toString('utf8'),
    size: end + 4 + length,
  };
}

/** A hand-driven HTTP/1.1 connection. */
export class RawConnection {
  readonly socket: net.Socket;
  private data = Buffer.alloc(0);
  closed = false;
  bytesWritten = 0;

  private constructor(socket: net.Socket) {
    this.socket = socket;
    socket.on('data', (chunk: Buffer) => {
      this.data = Buffer.concat([this.data, chunk]);
    });
    socket.on('close', () => {
      this.closed = true;
    });
    // Writes racing the server's close may fail with EPIPE/ECONNRESET; the response is what counts.
    socket.on('error', () => {});
  }

  static async open(port: number): Promise<RawConnection> {
    const socket = net.connect({ host: '127.0.0.1', port });
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    return new RawConnection(socket);
  }

  /** Resolves once the kernel took the bytes (or the socket is gone). */
  write(data: string | Buffer): Promise<void> {
    if (this.closed || this.socket.destroyed) return Promise.resolve();
    const buffer = typeof data === 'string' ? Buffer.from(data, 'latin1') : data;
    return new Promise<void>((resolve) => {
      this.socket.write(buffer, () => {
        this.bytesWritten += buffer.length;
        resolve();
      });
    });
  }

  /** The first complete response received so far, if any. */
  peek(): RawResponse | undefined {
    return parseResponse(this.data);
  }

  /** Every complete response received so far (pipelined requests answer in order). */
  all(): RawResponse[] {
    const responses: RawResponse[] = [];
    let rest = this.data;
    for (;;) {
      const next = parseResponse(rest);
      if (!next) return responses;
      responses.push(next);
      rest = rest.subarray(next.size);
    }
  }

  async response(timeoutMs = 5000): Promise<RawResponse> {
    const response = await waitFor(() => this.peek(), {
      timeoutMs,
      intervalMs: 5,
      message: 'no complete HTTP response',
    });
    return response!;
  }

  destroy(): void {
    this.socket.destroy();
  }
}
