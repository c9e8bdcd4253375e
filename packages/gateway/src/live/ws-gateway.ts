import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { BadgeService } from '@bubble/badges';
import {
  BubbleError,
  CLOSE,
  checkInput,
  isNewerState,
  LIMITS,
  parseJsonText,
  readRequestSchema,
  validationError,
} from '@bubble/protocol';
import type { Logger } from 'pino';
import { WebSocket, WebSocketServer, type RawData } from 'ws';
import { credentialInQueryError, hasCredentialInQuery, type Authenticator } from '../auth.js';
import { ClientAddressResolver } from '../http/client-address.js';
import type { LoadMonitor } from '../load-monitor.js';
import {
  DEFAULT_MAX_ADMITTING,
  admit,
  destroySocket,
  refuse,
  releaseAdmission,
} from './admission.js';
import { DEFAULT_DRAIN_MAX_MS, DEFAULT_DRAIN_RATE, closePaced } from './drain.js';
import { HeldBadge } from './held-badge.js';
import { IpRateLimiter, type TakeResult } from './ip-rate-limiter.js';
import type { LiveUsers } from './live-users.js';
import { Peer, closeBeforeAdmission, onAuthTimeout, onError, onPong } from './peer.js';
import { writeAsciiTextFrame, writeTextFrame } from './text-frame.js';
import { WATCH_SAFETY_REFRESH_MS, WatchedLists } from './watched-lists.js';

/** The per-address limit of new connections (BUBBLE_WS_CONNECT_RATE and _BURST). */
export const DEFAULT_CONNECT_LIMIT = { perSecond: 20, burst: 50 } as const;

export interface WsGatewayOptions {
  service: BadgeService;
  auth: Authenticator;
  live: LiveUsers;
  load: LoadMonitor;
  logger: Logger;
  maxPayload: number;
  allowedOrigins?: readonly string[];
  maxConnections?: number;
  /** Connections admitted at once (default DEFAULT_MAX_ADMITTING), else 503 at the upgrade. */
  maxAdmitting?: number;
  /** A connection whose unsent pushes exceed this is closed (slow consumer). */
  maxBufferedBytes?: number;
  authTimeoutMs?: number;
  /** How often every socket is pinged (default 25 s). */
  heartbeatMs?: number;
  /** How long a ping waits for its pong before the socket is terminated (default 8 s). */
  pongTimeoutMs?: number;
  /** New connections per client address: a token bucket (default DEFAULT_CONNECT_LIMIT). */
  connectLimit?: { perSecond: number; burst: number };
  /** Sockets a drain closes per second (default DEFAULT_DRAIN_RATE). */
  drainRate?: number;
  /** The longest a drain spreads its closes over (default DEFAULT_DRAIN_MAX_MS; 0 at once). */
  drainMaxMs?: number;
  /** Who a request comes from (trusted proxies and X-Forwarded-For); default the socket peer. */
  clientAddresses?: ClientAddressResolver;
  /**
   * The gateway's node id: with it, the list signals routed here (GatewayLink.subscribeLists)
   * re-read the lists of the watching connections of the users they name.
   */
  gatewayId?: string;
  /**
   * A watching connection's list is re-read when a list signal or a badge whose conversation
   * counts moved names its user, on a local read, and as a safety net this often (default
   * WATCH_SAFETY_REFRESH_MS; 0 never): pub/sub is at most once, and a Cluster's sharded
   * subscriber does not tell of its reconnection.
   */
  watchRefreshMs?: number;
  /** Told of every re-read of a watched list (bubble_watch_list_reads_total). */
  onListRead?: () => void;
  /**
   * The per-user budget of the client routes (ClientLimits.takeFrame): every frame that touches
   * the store is charged to it, and one over it is answered with an error frame and not applied.
   */
  frameBudget?: (user: string) => TakeResult;
}

/** The heartbeat's defaults (docs/security.md): ping every 25 s, a pong due within 8 s. */
export const HEARTBEAT_MS = 25_000;
export const PONG_TIMEOUT_MS = 8_000;
/**
 * A message of ours in at most 16 fragments, at most 64 chunks buffered, pings answered at most
 * 8 behind. (`maxPendingAutoPongs` is ws ≥ 8.21's and not yet in @types/ws: hence the record.)
 */
const RECEIVER_LIMITS: Record<
  'maxFragments' | 'maxBufferedChunks' | 'maxPendingAutoPongs',
  number
> = { maxFragments: 16, maxBufferedChunks: 64, maxPendingAutoPongs: 8 };

/**
 * GET /v1/ws: authenticated sockets that receive their user's badge on every change, and carry
 * reads. Connections are what make a user online: the first opens presence, the last ends it.
 */
export class WsGateway {
  private readonly wss: WebSocketServer;
  private readonly peers = new Set<Peer>();
  private readonly limiter: IpRateLimiter;
  private readonly clientAddresses: ClientAddressResolver;
  private readonly log: Logger;
  private heartbeat: NodeJS.Timeout | undefined;
  private pongDeadline: NodeJS.Timeout | undefined;
  /** The conversation lists connections watch. */
  readonly lists: WatchedLists;
  private draining = false;
  /** Upgrades admitted and not yet past their first badge (or closed). */
  admitting = 0;

  constructor(
    server: Server,
    private readonly options: WsGatewayOptions,
  ) {
    this.log = options.logger.child({ module: 'ws-gateway' });
    this.limiter = new IpRateLimiter(options.connectLimit ?? DEFAULT_CONNECT_LIMIT);
    this.clientAddresses = options.clientAddresses ?? new ClientAddressResolver();
    this.wss = new WebSocketServer({
      noServer: true,
      maxPayload: options.maxPayload,
      // Set here, not left to the release's defaults (16k fragments, 256k chunks): a frame of
      // ours is one small JSON text, and a flood of one-byte fragments is closed with 1008.
      ...RECEIVER_LIMITS,
      perMessageDeflate: false,
      clientTracking: false,
      WebSocket: Peer,
    });
    server.on('upgrade', (req, socket, head) => void this.upgrade(req, socket, head));
    // One interval for every socket: pings, then terminates those whose pong did not come
    // within the timeout. A peer that vanished (no FIN) is gone within interval + timeout.
    this.heartbeat = setInterval(() => this.ping(), options.heartbeatMs ?? HEARTBEAT_MS);
    this.heartbeat.unref();
    this.lists = new WatchedLists({
      service: options.service,
      log: this.log,
      maxPayload: options.maxPayload,
      refreshMs: options.watchRefreshMs ?? WATCH_SAFETY_REFRESH_MS,
      onListRead: options.onListRead,
      send: (ws, text) => this.sendText(ws, text),
    });
  }

  /** Subscribes to the list signals routed to this gateway (before any socket is taken). */
  async start(): Promise<void> {
    const { gatewayId } = this.options;
    if (gatewayId) await this.lists.start(gatewayId);
  }

  get connections(): number {
    return this.peers.size;
  }

  /**
   * Stops accepting and tells every client to reconnect elsewhere (1001), paced: at most
   * `drainRate` sockets a second, all of them within `drainMaxMs`. Until its turn a socket is
   * served as before (pushes, reads, its watched list).
   */
  async close(): Promise<void> {
    this.draining = true;
    clearInterval(this.heartbeat);
    clearTimeout(this.pongDeadline);
    await closePaced(
      this.peers,
      this.options.drainRate ?? DEFAULT_DRAIN_RATE,
      this.options.drainMaxMs ?? DEFAULT_DRAIN_MAX_MS,
      this.log,
    );
    await this.lists.close();
    const deadline = Date.now() + 2000;
    while (this.peers.size > 0 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    for (const ws of this.peers) ws.terminate();
    this.wss.close();
  }

  private async upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    // node:http hands over an upgrade's socket without an 'error' listener: a client that resets
    // while its token is checked or while it is refused must not crash the process.
    // (A function of the module, not a closure: a closure here would share this call's scope
    // and keep the upgrade request, token included, alive as long as the socket.)
    socket.on('error', destroySocket);
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://bubble.invalid');
    } catch {
      return refuse(socket, 400, 'UB_ERR_BAD_REQUEST', 'the request URL cannot be parsed');
    }
    if (url.pathname !== '/v1/ws') {
      return refuse(socket, 404, 'UB_ERR_NOT_FOUND', 'no WebSocket here');
    }
    if (hasCredentialInQuery(url.searchParams)) {
      const error = credentialInQueryError();
      return refuse(socket, 401, error.code, error.message);
    }
    if (this.draining) return refuse(socket, 503, 'UB_ERR_UNAVAILABLE', 'draining');
    // Browsers send Origin; a page of another site is refused before anything else is spent.
    const origin = req.headers.origin;
    const allowed = this.options.allowedOrigins;
    if (origin !== undefined && allowed && allowed.length > 0 && !allowed.includes(origin)) {
      return refuse(socket, 403, 'UB_ERR_FORBIDDEN', 'this Origin is not allowed');
    }
    const client = this.clientAddresses.resolve(
      req.socket.remoteAddress,
      req.headers['x-forwarded-for'],
    );
    const taken = this.limiter.take(client.bucket);
    if (!taken.allowed) {
      return refuse(
        socket,
        429,
        'UB_ERR_RATE_LIMITED',
        'too many new connections from this address',
        { 'Retry-After': String(taken.retryAfterSeconds) },
      );
    }
    if (this.admitting >= (this.options.maxAdmitting ?? DEFAULT_MAX_ADMITTING)) {
      return refuse(socket, 503, 'UB_ERR_UNAVAILABLE', 'too many connections being admitted', {
        'Retry-After': '1',
      });
    }
    const admitted = admit(socket, this);
    let user: string | null = null;
    if (req.headers.authorization !== undefined) {
      try {
        user = await this.options.auth.requireUser(req);
      } catch (err) {
        const error =
          err instanceof BubbleError
            ? err
            : new BubbleError('UB_ERR_UNAUTHORIZED', 'invalid token');
        return refuse(socket, 401, error.code, error.message);
      }
    }
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      // The WebSocket now listens for the socket's errors itself.
      socket.removeListener('error', destroySocket);
      (ws as Peer).admission = admitted;
      (ws as Peer).wire = socket;
      this.accept(ws as Peer, user);
    });
  }

  private accept(ws: Peer, user: string | null): void {
    const max = this.options.maxConnections ?? 100_000;
    if (this.peers.size >= max || this.options.load.overloaded()) {
      ws.close(CLOSE.overloaded, 'overloaded');
      return;
    }
    ws.gateway = this;
    this.peers.add(ws);
    ws.on('pong', onPong);
    ws.on('error', onError);
    ws.on('close', WsGateway.onClose);
    ws.on('message', WsGateway.onMessage);
    if (user) {
      void this.authenticated(ws, user);
      return;
    }
    ws.authTimer = setTimeout(onAuthTimeout, this.options.authTimeoutMs ?? 5000, ws);
    ws.authTimer.unref();
  }

  // Listeners shared by every connection (`this` is the socket).
  private static onClose(this: WebSocket): void {
    const ws = this as Peer;
    (ws.gateway as WsGateway | null)?.closed(ws);
  }

  private static onMessage(this: WebSocket, data: RawData, isBinary: boolean): void {
    const ws = this as Peer;
    // The only host of a Peer is a WsGateway (PeerHost keeps peer.ts from importing this file).
    (ws.gateway as WsGateway | null)?.enqueue(ws, data, isBinary);
  }

  private closed(ws: Peer): void {
    ws.gone = true;
    this.peers.delete(ws);
    if (ws.watched && ws.user) this.lists.unwatch(ws, ws.user);
    ws.watched = null;
    if (ws.authTimer) clearTimeout(ws.authTimer);
    ws.authTimer = null;
    if (ws.user) void this.options.live.detach(ws.user, ws);
  }

  /** A frame waits for the ones before it. */
  private enqueue(ws: Peer, data: RawData, isBinary: boolean): void {
    const next = (ws.queue ?? RESOLVED).then(() => this.receive(ws, data, isBinary));
    ws.queue = next;
    const settled = () => {
      if (ws.queue === next) ws.queue = null;
    };
    next.then(settled, (err: unknown) => {
      settled();
      this.log.error({ err }, 'a frame could not be handled');
    });
  }

  private async authenticated(ws: Peer, user: string): Promise<void> {
    if (ws.authTimer) clearTimeout(ws.authTimer);
    ws.authTimer = null;
    // Closed while its token was verified: closed() ran with no user to detach.
    if (ws.gone) {
      if (ws.admission) releaseAdmission(ws.admission);
      ws.admission = null;
      return;
    }
    ws.user = user;
    try {
      const badge = await this.options.live.attach(user, ws);
      // Closed while attach() held the user: closed() detached nothing (or before the attach
      // took), and nothing else would, leaving the user online with no socket.
      if (ws.gone) {
        await this.options.live.detach(user, ws);
        return;
      }
      this.send(ws, badge);
    } catch (err) {
      this.log.warn({ err }, 'could not compute the badge of a new connection');
      ws.close(CLOSE.overloaded, 'try again');
    } finally {
      if (ws.admission) releaseAdmission(ws.admission);
      ws.admission = null;
    }
  }

  /** Closes on a frame it cannot take; one that never authenticated as closeBeforeAdmission. */
  private refuseFrame(ws: Peer, code: number, reason: string): void {
    if (ws.user) ws.close(code, reason);
    else closeBeforeAdmission(ws, code, reason);
  }

  private async receive(ws: Peer, data: RawData, isBinary: boolean): Promise<void> {
    let frame: unknown;
    try {
      if (isBinary) throw new Error('binary');
      frame = parseJsonText(data.toString(), 'the frame');
    } catch {
      this.refuseFrame(
        ws,
        CLOSE.policy,
        `frames are JSON text nested at most ${LIMITS.maxJsonDepth} deep`,
      );
      return;
    }
    const type =
      typeof frame === 'object' && frame !== null ? (frame as { type?: unknown }).type : undefined;
    if (type === 'auth') {
      const token = (frame as { token?: unknown }).token;
      if (ws.user || typeof token !== 'string') {
        this.refuseFrame(ws, ws.user ? CLOSE.policy : CLOSE.authFailed, 'unexpected auth');
        return;
      }
      try {
        const user = await this.options.auth.verifyToken(token);
        await this.authenticated(ws, user);
      } catch {
        closeBeforeAdmission(ws, CLOSE.authFailed, 'authentication failed');
      }
      return;
    }
    if (!ws.user) {
      const code = type === 'read' || type === 'ping' ? CLOSE.authFailed : CLOSE.policy;
      closeBeforeAdmission(ws, code, 'authenticate first');
      return;
    }
    if (type === 'ping') {
      this.sendText(ws, '{"type":"pong"}');
      return;
    }
    if ((type === 'watch' || type === 'read') && !this.withinBudget(ws, ws.user)) return;
    if (type === 'watch') {
      this.lists.watch(ws, ws.user, (frame as { what?: unknown }).what);
      return;
    }
    if (type !== 'read') {
      ws.close(CLOSE.policy, 'unknown frame type');
      return;
    }
    const { type: _type, ...body } = frame as Record<string, unknown>;
    const parsed = checkInput(readRequestSchema, body);
    if (!parsed.success) {
      this.sendError(ws, validationError(parsed.error));
      return;
    }
    try {
      const badge = HeldBadge.of(await this.options.service.read(ws.user, parsed.data));
      this.send(ws, badge, true);
      this.options.live.publishLocal(badge);
      if (ws.watched) this.lists.refreshList(ws);
    } catch (err) {
      this.sendError(
        ws,
        err instanceof BubbleError ? err : new BubbleError('UB_ERR_INTERNAL', 'read failed'),
      );
    }
  }

  /** Never sends an older version than the last one; `answer` re-sends the same one (a read). */
  send(ws: Peer, badge: HeldBadge, answer = false): void {
    if (ws.readyState !== WebSocket.OPEN) return;
    // Not newer means the same epoch and a version not greater: only an answer re-sends it.
    const { epoch, version } = badge;
    // isNewerBadge(badge, ws.sent), from the stamp kept on the connection.
    const newer = isNewerState(epoch === ws.sentEpoch, version, ws.sentVersion);
    if (!newer && !(answer && version === ws.sentVersion)) return;
    ws.sent = badge;
    ws.sentEpoch = epoch;
    ws.sentVersion = version;
    this.sendText(ws, badge.frame, badge.ascii);
  }

  /**
   * Every frame goes through here: a connection whose unsent frames pass the bound is dropped
   * (a slow consumer), so no client can make the gateway buffer without limit.
   */
  sendText(ws: Peer, text: string, ascii = false): void {
    if (ws.readyState !== WebSocket.OPEN) return;
    // ws.bufferedAmount less the sender's queue, which holds nothing without compression.
    const buffered = ws.wire ? ws.wire.writableLength : ws.bufferedAmount;
    if (buffered > (this.options.maxBufferedBytes ?? 256 * 1024)) {
      // The close frame would queue behind the backlog: ask politely, then cut it off.
      ws.close(CLOSE.overloaded, 'too slow to keep up');
      setTimeout(() => ws.terminate(), 1000).unref();
      return;
    }
    if (!ws.wire) ws.send(text);
    else if (ascii) writeAsciiTextFrame(ws.wire, text);
    else writeTextFrame(ws.wire, text);
  }

  /** Whether the frame may go on; if not, the client is told when to try again. */
  private withinBudget(ws: Peer, user: string): boolean {
    const taken = this.options.frameBudget?.(user);
    if (taken === undefined || taken.allowed) return true;
    this.sendError(
      ws,
      new BubbleError(
        'UB_ERR_RATE_LIMITED',
        `too many requests for this user; this frame was not applied, retry in ${taken.retryAfterSeconds} s`,
      ),
    );
    return false;
  }

  private sendError(ws: Peer, error: BubbleError): void {
    this.sendText(ws, JSON.stringify({ type: 'error', code: error.code, message: error.message }));
  }

  private ping(): void {
    for (const ws of this.peers) {
      ws.alive = false;
      ws.ping();
    }
    clearTimeout(this.pongDeadline);
    this.pongDeadline = setTimeout(
      () => this.dropSilent(),
      this.options.pongTimeoutMs ?? PONG_TIMEOUT_MS,
    );
    this.pongDeadline.unref();
  }

  private dropSilent(): void {
    for (const ws of this.peers) if (!ws.alive) ws.terminate();
  }
}

const RESOLVED = Promise.resolve();
