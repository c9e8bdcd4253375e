import {
  STATUS_CODES,
  createServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { BubbleError, type ClusterStatus } from '@bubble/protocol';
import type { BadgeService } from '@bubble/badges';
import type { Logger } from 'pino';
import {
  Authenticator,
  credentialInQueryError,
  hasCredentialInQuery,
  type AuthOptions,
} from './auth.js';
import { refuseDeclaredOversize } from './http/body.js';
import { addDashboardRoutes } from './dashboard/dashboard-routes.js';
import type { ClusterReads } from './dashboard/history.js';
import { trackLiveGauges } from './dashboard/live-gauges.js';
import { addDemoRoutes, type DemoOptions } from './demo/demo-routes.js';
import { ClientAddressResolver, type Cidr } from './http/client-address.js';
import {
  ClientLimits,
  DEFAULT_CLIENT_LIMITS,
  RateLimitedError,
  type ClientLimitOptions,
} from './http/client-limits.js';
import { sendError } from './http/respond.js';
import { Router } from './http/router.js';
import { LoadMonitor } from './load-monitor.js';
import { LiveUsers } from './live/live-users.js';
import { WsGateway } from './live/ws-gateway.js';
import { GatewayMetrics } from './metrics.js';
import { addClientRoutes } from './routes/client-routes.js';
import { addOperatorRoutes } from './routes/operator-routes.js';
import { addPlatformRoutes } from './routes/platform-routes.js';

/** How long a client may take to send its headers, and its whole request (docs/security.md). */
export const HEADERS_TIMEOUT_MS = 10_000;
export const REQUEST_TIMEOUT_MS = 30_000;

export interface GatewayOptions {
  service: BadgeService;
  /** Required when serving platform or client routes. */
  auth?: AuthOptions;
  logger: Logger;
  metrics?: GatewayMetrics;
  basePollSeconds?: number;
  maxInFlight?: number;
  /** Time allowed for requests in flight to finish on shutdown. */
  drainTimeoutMs?: number;
  /** GET /v1/cluster's answer; without it that route answers 404. */
  clusterStatus?: () => Promise<ClusterStatus>;
  /**
   * The cluster's sweep reports and node list, read-only, for the dashboard's history. The
   * dashboard is served (with the operator routes and `auth`) when this and `clusterStatus`
   * are given.
   */
  clusterReads?: ClusterReads;
  /**
   * Live badges (the WebSocket endpoint and cached polls). Needs a gateway id unique in the
   * cluster: badge changes of the users held here are routed to it.
   */
  live?: {
    gatewayId: string;
    presenceTtlMs?: number;
    /** Lost pub/sub messages are looked for this often (BUBBLE_PUBSUB_CHECK_MS, 2 s). */
    pubsubCheckMs?: number;
    maxPayload?: number;
    allowedOrigins?: readonly string[];
    maxConnections?: number;
    /** Protocol pings every this often (BUBBLE_WS_PING_INTERVAL_MS, 25 s). */
    heartbeatMs?: number;
    /** A ping's pong is due within this (BUBBLE_WS_PONG_TIMEOUT_MS, 8 s), else the socket is cut. */
    pongTimeoutMs?: number;
    /** New WebSocket connections per client address (default 20/s, burst 50). */
    connectLimit?: { perSecond: number; burst: number };
    /** A drain's pace: sockets closed per second, and the longest it takes (ws-gateway.ts). */
    drainRate?: number;
    drainMaxMs?: number;
    /** Proxies whose X-Forwarded-For names the client (BUBBLE_TRUSTED_PROXIES). */
    trustedProxies?: readonly Cidr[];
    /** Connections being admitted at once (DEFAULT_MAX_ADMITTING) and the auth frame's wait (5 s). */
    maxAdmitting?: number;
    authTimeoutMs?: number;
  };
  /**
   * Per-user and per-address limits of the client routes (default DEFAULT_CLIENT_LIMITS); the
   * addresses are resolved through `trustedProxies`.
   */
  clientLimits?: ClientLimitOptions;
  /** Proxies whose X-Forwarded-For names the client (BUBBLE_TRUSTED_PROXIES); else `live`'s. */
  trustedProxies?: readonly Cidr[];
  /** Which route groups this server answers; default all. */
  serves?: readonly RouteGroup[];
  /** The demo page at /demo, served with the client routes. */
  demo?: DemoOptions;
}

export type RouteGroup = 'operator' | 'platform' | 'client';

/** What a gateway answers before it started. */
const PROBE_ROUTES = new Set(['/healthz', '/readyz', '/metrics']);

/** The HTTP face of bubble: client, platform and operator routes on one node:http server. */
export class HttpGateway {
  readonly server: Server;
  readonly metrics: GatewayMetrics;
  readonly load: LoadMonitor;
  private readonly router = new Router();
  private readonly logger: Logger;
  private draining = false;
  readonly liveUsers: LiveUsers | undefined;
  /** The client routes' per-user and per-address limits, when this server answers them. */
  readonly clientLimits: ClientLimits | undefined;
  private wsGateway: WsGateway | undefined;
  private createWs: (() => WsGateway) | undefined;
  /** Until start(), only the probes and /metrics answer (and /readyz says 503 'starting'). */
  private started = false;
  private starting: Promise<void> | undefined;
  private closing: Promise<void> | undefined;
  private untrackGauges: (() => void) | undefined;
  private stopDashboard: (() => void) | undefined;

  constructor(private readonly options: GatewayOptions) {
    this.logger = options.logger.child({ module: 'http-gateway' });
    this.metrics = options.metrics ?? new GatewayMetrics();
    this.load = new LoadMonitor({
      basePollSeconds: options.basePollSeconds ?? 15,
      maxInFlight: options.maxInFlight ?? 10_000,
    });
    const { service } = options;
    const serves = new Set(options.serves ?? ['operator', 'platform', 'client']);
    const needsAuth = serves.has('platform') || serves.has('client');
    if (needsAuth && !options.auth) throw new Error('platform and client routes need auth options');
    const auth = new Authenticator(options.auth ?? { apiKey: '', jwtSecret: '' });
    if (serves.has('operator')) {
      addOperatorRoutes(this.router, {
        metrics: this.metrics,
        checkDependencies: () => service.gatewayLink.ping(),
        isStarted: () => this.started,
        isDraining: () => this.draining,
        isOverloaded: () => this.load.overloaded(),
      });
      // The dashboard, where the cluster can be read (the gateway and `all`, not server or core).
      if (options.auth && options.clusterStatus && options.clusterReads)
        this.stopDashboard = addDashboardRoutes(this.router, {
          auth,
          clusterStatus: options.clusterStatus,
          serveCluster: !serves.has('platform'),
          cluster: options.clusterReads,
          registry: this.metrics.registry,
        });
    }
    if (serves.has('platform'))
      addPlatformRoutes(this.router, {
        service,
        auth,
        metrics: this.metrics,
        clusterStatus: options.clusterStatus,
        published: (badge) => this.liveUsers?.publishLocal(badge),
      });
    const live = options.live;
    if (live && serves.has('client')) {
      const presenceTtlMs = live.presenceTtlMs ?? 30_000;
      this.liveUsers = new LiveUsers({
        gatewayId: live.gatewayId,
        service,
        logger: options.logger,
        presenceTtlMs,
        // Three of the intervals pollers are told to use, which grow under load.
        pollerTtlMs: () => 3 * this.load.pollIntervalSeconds() * 1000,
        onPushed: (seconds) => this.metrics.pushWait.observe(seconds),
        pubsubCheckMs: live.pubsubCheckMs,
        onResync: ({ reasons, repaired }) => {
          for (const reason of reasons) this.metrics.resyncs.inc({ reason });
          this.metrics.resyncRepairs.inc(repaired);
        },
      });
    }
    if (serves.has('client')) {
      const limits = (this.clientLimits = new ClientLimits(
        options.clientLimits ?? DEFAULT_CLIENT_LIMITS,
        new ClientAddressResolver(options.trustedProxies ?? live?.trustedProxies ?? []),
        (limit) => this.metrics.rateLimited.inc({ limit }),
      ));
      addClientRoutes(this.router, {
        service,
        auth,
        load: this.load,
        metrics: this.metrics,
        limits,
        live: this.liveUsers,
      });
      if (options.demo && options.auth)
        addDemoRoutes(this.router, { ...options.demo, auth: options.auth });
    }
    this.server = createServer(
      {
        // A slowloris (headers or a body dribbled forever, on a request or an upgrade) is cut
        // off: the headers within 10 s, the whole request within 30 s, checked every second.
        headersTimeout: HEADERS_TIMEOUT_MS,
        requestTimeout: REQUEST_TIMEOUT_MS,
        connectionsCheckingInterval: 1000,
      },
      (req, res) => {
        void this.handle(req, res);
      },
    );
    this.server.keepAliveTimeout = 65_000;
    this.server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) =>
      answerClientError(err, socket),
    );
    const liveUsers = this.liveUsers;
    if (liveUsers && live) {
      // Made at start(): its upgrade listener must not take sockets before the live users run.
      this.createWs = () =>
        new WsGateway(this.server, {
          service,
          auth,
          live: liveUsers,
          load: this.load,
          logger: options.logger,
          maxPayload: live.maxPayload ?? 4096,
          allowedOrigins: live.allowedOrigins,
          maxConnections: live.maxConnections,
          heartbeatMs: live.heartbeatMs,
          pongTimeoutMs: live.pongTimeoutMs,
          connectLimit: live.connectLimit,
          drainRate: live.drainRate,
          drainMaxMs: live.drainMaxMs,
          maxAdmitting: live.maxAdmitting,
          authTimeoutMs: live.authTimeoutMs,
          ...(this.clientLimits
            ? { frameBudget: (user: string) => this.clientLimits!.takeFrame(user) }
            : {}),
          clientAddresses: new ClientAddressResolver(live.trustedProxies ?? []),
          gatewayId: live.gatewayId,
          onListRead: () => this.metrics.watchListReads.inc(),
        });
    }
    if (liveUsers)
      this.untrackGauges = trackLiveGauges(this.metrics.registry, {
        connections: () => this.ws?.connections ?? 0,
        connectionLimit: () => (this.ws ? (options.live?.maxConnections ?? 100_000) : 0),
        usersHeld: () => liveUsers.size,
        pushStats: () => liveUsers.pushStats(),
      });
  }

  get ws(): WsGateway | undefined {
    return this.wsGateway;
  }

  get isStarted(): boolean {
    return this.started;
  }

  /**
   * Listens, started first unless `beforeStart`: then only /healthz, /readyz (503 'starting')
   * and /metrics answer until start(), so a role waiting for its store is alive but not ready.
   */
  async listen(
    port: number,
    host = '0.0.0.0',
    { beforeStart = false }: { beforeStart?: boolean } = {},
  ): Promise<AddressInfo> {
    if (!beforeStart) await this.start();
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    return this.server.address() as AddressInfo;
  }

  /** Subscribes the live users and opens every route. Safe to call twice. */
  start(): Promise<void> {
    this.starting ??= (async () => {
      await this.liveUsers?.start();
      if (this.closing) return;
      this.wsGateway = this.createWs?.();
      await this.wsGateway?.start();
      this.started = true;
    })();
    return this.starting;
  }

  /** Stop accepting, let requests in flight finish (bounded), then close. Safe to call twice. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.draining = true;
      await this.ws?.close();
      await this.liveUsers?.close();
      const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
      this.server.closeIdleConnections();
      const timeout = new Promise<void>((resolve) =>
        setTimeout(resolve, this.options.drainTimeoutMs ?? 5000).unref(),
      );
      await Promise.race([closed, timeout]);
      this.server.closeAllConnections();
      this.load.close();
      this.untrackGauges?.();
      this.stopDashboard?.();
    })();
    return this.closing;
  }

  /** Every HTTP route this gateway serves (method and pattern, `:name` for a parameter). */
  routes(): Array<{ method: string; pattern: string }> {
    return this.router.list();
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = performance.now();
    const method = req.method ?? 'GET';
    let route = 'unmatched';
    this.load.inFlight++;
    try {
      const url = new URL(req.url ?? '/', 'http://bubble.invalid');
      if (hasCredentialInQuery(url.searchParams)) throw credentialInQueryError();
      // Refused on its declared length on every route, also one that would not read it.
      refuseDeclaredOversize(req);
      const match = this.router.match(method, url.pathname);
      if (match.kind === 'not-found') {
        throw new BubbleError('UB_ERR_NOT_FOUND', `no route for ${method} ${url.pathname}`);
      }
      route = match.route;
      if (!this.started && !PROBE_ROUTES.has(route)) {
        throw new BubbleError('UB_ERR_UNAVAILABLE', 'starting');
      }
      if (match.kind === 'method-not-allowed') {
        sendError(
          res,
          new BubbleError('UB_ERR_METHOD_NOT_ALLOWED', `${method} is not allowed here`),
          {
            allow: match.allow.join(', '),
          },
        );
        return;
      }
      await match.handler({ req, res, params: match.params, route });
    } catch (err) {
      this.fail(res, err, method, route);
    } finally {
      this.load.inFlight--;
      const status = String(res.statusCode);
      this.metrics.httpRequests.inc({ route, method, status });
      this.metrics.httpDuration.observe({ route }, (performance.now() - started) / 1000);
    }
  }

  private fail(res: ServerResponse, err: unknown, method: string, route: string): void {
    const error =
      err instanceof BubbleError
        ? err
        : isConnectionError(err)
          ? new BubbleError('UB_ERR_UNAVAILABLE', 'the store is not reachable', { cause: err })
          : new BubbleError('UB_ERR_INTERNAL', 'internal error', { cause: err });
    // A probe's 503, or any answer before the start, says what the backoff lines already say.
    const expected = error.code === 'UB_ERR_UNAVAILABLE' && (route === '/readyz' || !this.started);
    if (error.status >= 500 && !expected)
      this.logger.error({ err, method, route }, 'request failed');
    if (res.headersSent) {
      res.destroy();
      return;
    }
    const headers: Record<string, string> =
      error instanceof RateLimitedError
        ? { 'retry-after': String(error.retryAfterSeconds) }
        : error.code === 'UB_ERR_TOO_LARGE'
          ? { connection: 'close' }
          : {};
    sendError(res, error, headers);
  }
}

/**
 * A request node:http cannot parse still gets the contract's JSON error body (node's default
 * answer has none). Timeouts and resets just close the connection.
 */
function answerClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  // Never write into a response already under way on this connection.
  const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (
    err.code === 'ECONNRESET' ||
    err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ||
    !socket.writable ||
    inFlight?.headersSent
  ) {
    socket.destroy();
    return;
  }
  const error =
    err.code === 'HPE_HEADER_OVERFLOW' || err.code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW'
      ? new BubbleError('UB_ERR_TOO_LARGE', 'the request head is too large')
      : new BubbleError('UB_ERR_BAD_REQUEST', 'the request is not valid HTTP/1.1');
  const body = JSON.stringify(error.toJSON());
  socket.end(
    `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status]}\r\n` +
      'content-type: application/json; charset=utf-8\r\n' +
      `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
  // Let the answer drain, but keep no half-closed connection around.
  setTimeout(() => socket.destroy(), 1000).unref();
}

/**
 * ioredis gives up on a command when the connection is down or the reply is late, and a Redis
 * Cluster answers CLUSTERDOWN, TRYAGAIN or an unredirected MOVED/ASK while slots move: all
 * temporary, so a 503 the caller retries, not a 500.
 */
function isConnectionError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  return (
    err.name === 'MaxRetriesPerRequestError' ||
    err.name === 'ClusterAllFailedError' ||
    /Connection is closed|Command timed out|ECONNREFUSED|ECONNRESET|ETIMEDOUT|Failed to refresh slots cache|^(CLUSTERDOWN|TRYAGAIN|MOVED|ASK) /.test(
      err.message,
    )
  );
}
