import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { BadgeService, ConversationListItem } from '@bubble/badges';
import {
  BubbleError,
  CLOSE,
  LIMITS,
  describeIssues,
  isNewerState,
  readRequestSchema,
  type Badge,
} from '@bubble/protocol';
import type { Logger } from 'pino';
import { WebSocket, WebSocketServer, type RawData } from 'ws';
import { credentialInQueryError, hasCredentialInQuery, type Authenticator } from '../auth.js';
import { ClientAddressResolver } from '../http/client-address.js';
import type { LoadMonitor } from '../load-monitor.js';
import { HeldBadge } from './held-badge.js';
import { IpRateLimiter } from './ip-rate-limiter.js';
import type { BadgeListener, LiveUsers } from './live-users.js';
import { writeAsciiTextFrame, writeTextFrame } from './text-frame.js';

/**
 * New connections being admitted at once (upgraded, not yet sent their first badge): past it an
 * upgrade is refused with 503 + Retry-After before it costs a handshake, a token check or a
 * badge. A reconnect storm then queues in the clients' backoff, not in the gateway's memory and
 * Redis round trips (docs/security.md "Reconnect storm").
 */
export const DEFAULT_MAX_ADMITTING = 256;

/**
 * A drain closes its sockets (1001) at most this many a second (BUBBLE_WS_DRAIN_RATE), and in at
 * most DEFAULT_DRAIN_MAX_MS in all (BUBBLE_WS_DRAIN_MAX_MS): the survivors see the clients come
 * at a rate they can admit, and a socket not yet closed keeps its pushes until its turn.
 */
export const DEFAULT_DRAIN_RATE = 2_000;
export const DEFAULT_DRAIN_MAX_MS = 5_000;
const DRAIN_SLICE_MS = 50;

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
}

/** The watched lists' safety refresh: a signal lost on the way is made good within it. */
export const WATCH_SAFETY_REFRESH_MS = 60_000;

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
/** The `what`s a `watch` frame may name. */
const WATCHABLE = new Set(['conversations']);

/**
 * One connection. The socket object itself carries the connection's state, and its listeners
 * are shared functions of the module (`this` is the socket): an idle connection costs the
 * gateway no closures, contexts or map entries of its own besides its place in `peers`.
 */
class Peer extends WebSocket implements BadgeListener {
  gateway: WsGateway | null = null;
  user: string | null = null;
  alive = true;
  /** The newest badge sent on this connection: nothing older follows it. */
  sent: HeldBadge | null = null;
  /** Its stamp, on the connection itself (compared on every push). */
  sentEpoch: string | null = null;
  sentVersion = 0;
  /** Frames of one connection are handled one after another, in order (null: none pending). */
  queue: Promise<void> | null = null;
  /** Set while a connection without a header token has to authenticate by its first frame. */
  authTimer: NodeJS.Timeout | null = null;
  /** After `watch`: each list entry as last sent on this connection (id → its JSON). */
  watched: Map<string, string> | null = null;
  /** A list re-read is running (`listAgain`: another one is owed when it ends). */
  listing = false;
  listAgain = false;
  /** The first list after `watch` is sent even when empty: the client's starting point. */
  listPrimed = false;
  /** The conversation counts of the last badge seen while watching (JSON): a change re-reads. */
  listedCounts: string | null = null;
  /** The raw socket while this connection counts as being admitted (until its first badge). */
  admission: AdmittedSocket | null = null;
  /** The socket under the connection, which frames are written to (writeTextFrame). */
  wire: Duplex | null = null;

  onBadge(badge: HeldBadge): void {
    this.gateway?.send(this, badge);
    if (this.watched) this.gateway?.badgeWhileWatching(this, badge.badge);
  }
}

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
  private watchTimer: NodeJS.Timeout | undefined;
  /** Connections that sent `watch`, by user (list signals name users). */
  private readonly watchers = new Map<string, Set<Peer>>();
  private stopListSignals: (() => Promise<void>) | undefined;
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
    const refreshMs = options.watchRefreshMs ?? WATCH_SAFETY_REFRESH_MS;
    if (refreshMs > 0) {
      this.watchTimer = setInterval(() => this.refreshEveryList(), refreshMs);
      this.watchTimer.unref();
    }
  }

  /** Subscribes to the list signals routed to this gateway (before any socket is taken). */
  async start(): Promise<void> {
    const { gatewayId, service } = this.options;
    if (!gatewayId || this.stopListSignals) return;
    this.stopListSignals = await service.gatewayLink.subscribeLists(
      gatewayId,
      (users) => this.listsChanged(users),
      () => this.refreshEveryList(),
    );
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
    await this.closePaced();
    clearInterval(this.watchTimer);
    await this.stopListSignals?.().catch(() => undefined);
    const deadline = Date.now() + 2000;
    while (this.peers.size > 0 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    for (const ws of this.peers) ws.terminate();
    this.wss.close();
  }

  private async closePaced(): Promise<void> {
    const rate = this.options.drainRate ?? DEFAULT_DRAIN_RATE;
    const maxMs = this.options.drainMaxMs ?? DEFAULT_DRAIN_MAX_MS;
    const peers = [...this.peers];
    const spanMs = Math.min(maxMs, (peers.length * 1000) / rate);
    this.log.info(
      { sockets: peers.length, overMs: Math.round(spanMs) },
      'draining: closing sockets with 1001',
    );
    // Socket i is due at i/n of the span: a late timer catches up, it does not stretch the span.
    const started = performance.now();
    let next = 0;
    while (next < peers.length) {
      const elapsed = performance.now() - started;
      const due =
        elapsed >= spanMs
          ? peers.length
          : Math.min(peers.length, Math.floor((elapsed / spanMs) * peers.length) + 1);
      for (; next < due; next++) {
        const ws = peers[next]!;
        if (ws.readyState === WebSocket.OPEN) ws.close(CLOSE.goingAway, 'draining');
      }
      if (next < peers.length) await new Promise((resolve) => setTimeout(resolve, DRAIN_SLICE_MS));
    }
    // A connection whose upgrade was past the draining check when the drain began.
    for (const ws of this.peers) {
      if (ws.readyState === WebSocket.OPEN) ws.close(CLOSE.goingAway, 'draining');
    }
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
    const admitted = socket as AdmittedSocket;
    admitted.admittedBy = this;
    this.admitting++;
    socket.once('close', onAdmittedClose);
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
    ws.gateway?.closed(ws);
  }

  private static onMessage(this: WebSocket, data: RawData, isBinary: boolean): void {
    const ws = this as Peer;
    ws.gateway?.enqueue(ws, data, isBinary);
  }

  private closed(ws: Peer): void {
    this.peers.delete(ws);
    if (ws.watched && ws.user) this.unwatch(ws, ws.user);
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
    ws.user = user;
    if (ws.authTimer) clearTimeout(ws.authTimer);
    ws.authTimer = null;
    try {
      const badge = await this.options.live.attach(user, ws);
      this.send(ws, badge);
    } catch (err) {
      this.log.warn({ err }, 'could not compute the badge of a new connection');
      ws.close(CLOSE.overloaded, 'try again');
    } finally {
      if (ws.admission) releaseAdmission(ws.admission);
      ws.admission = null;
    }
  }

  private async receive(ws: Peer, data: RawData, isBinary: boolean): Promise<void> {
    let frame: unknown;
    try {
      if (isBinary) throw new Error('binary');
      frame = JSON.parse(data.toString());
    } catch {
      ws.close(CLOSE.policy, 'frames are JSON text');
      return;
    }
    const type =
      typeof frame === 'object' && frame !== null ? (frame as { type?: unknown }).type : undefined;
    if (type === 'auth') {
      const token = (frame as { token?: unknown }).token;
      if (ws.user || typeof token !== 'string') {
        ws.close(ws.user ? CLOSE.policy : CLOSE.authFailed, 'unexpected auth');
        return;
      }
      try {
        const user = await this.options.auth.verifyToken(token);
        await this.authenticated(ws, user);
      } catch {
        ws.close(CLOSE.authFailed, 'authentication failed');
      }
      return;
    }
    if (!ws.user) {
      ws.close(
        type === 'read' || type === 'ping' ? CLOSE.authFailed : CLOSE.policy,
        'authenticate first',
      );
      return;
    }
    if (type === 'ping') {
      this.sendText(ws, '{"type":"pong"}');
      return;
    }
    if (type === 'watch') {
      const what = (frame as { what?: unknown }).what;
      if (typeof what !== 'string' || !WATCHABLE.has(what)) {
        ws.close(CLOSE.policy, 'watch what: "conversations"');
        return;
      }
      if (!ws.watched) {
        ws.watched = new Map();
        // The list read now is at least as new as the last badge sent: a badge with the same
        // conversation counts need not read it again.
        if (ws.sent) ws.listedCounts = JSON.stringify(ws.sent.badge.conversations);
        let set = this.watchers.get(ws.user);
        if (!set) this.watchers.set(ws.user, (set = new Set()));
        set.add(ws);
      }
      this.refreshList(ws);
      return;
    }
    if (type !== 'read') {
      ws.close(CLOSE.policy, 'unknown frame type');
      return;
    }
    const { type: _type, ...body } = frame as Record<string, unknown>;
    const parsed = readRequestSchema.safeParse(body);
    if (!parsed.success) {
      this.sendError(ws, new BubbleError('UB_ERR_BAD_REQUEST', describeIssues(parsed.error)));
      return;
    }
    try {
      const badge = HeldBadge.of(await this.options.service.read(ws.user, parsed.data));
      this.send(ws, badge, true);
      this.options.live.publishLocal(badge);
      if (ws.watched) this.refreshList(ws);
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

  /** A list signal: the watchers of these users read their lists again. */
  private listsChanged(users: readonly string[]): void {
    for (const user of users) {
      const set = this.watchers.get(user);
      if (set) for (const ws of set) this.refreshList(ws);
    }
  }

  private refreshEveryList(): void {
    for (const set of this.watchers.values()) for (const ws of set) this.refreshList(ws);
  }

  private unwatch(ws: Peer, user: string): void {
    const set = this.watchers.get(user);
    set?.delete(ws);
    if (set?.size === 0) this.watchers.delete(user);
  }

  /**
   * A badge of a watching connection's user: the list is read again only when its conversation
   * counts moved (a message or a read of another member, or on another device). Joins, leaves,
   * mutes and the user's own messages, which may leave them as they were, come as list signals.
   */
  badgeWhileWatching(ws: Peer, badge: Badge): void {
    const counts = JSON.stringify(badge.conversations);
    if (counts === ws.listedCounts) return;
    ws.listedCounts = counts;
    this.refreshList(ws);
  }

  /**
   * Re-reads a watching connection's list and sends the entries that changed since the last
   * frame (`{"id","removed":true}` for those that left it). Calls while one runs are conflated
   * into one more re-read after it: the client gets the latest state of each entry.
   */
  refreshList(ws: Peer): void {
    if (!ws.watched || !ws.user) return;
    if (ws.listing) {
      ws.listAgain = true;
      return;
    }
    ws.listing = true;
    this.options.onListRead?.();
    void this.options.service
      .conversationList(ws.user, LIMITS.maxConversationList)
      .then((list) => this.sendListChanges(ws, list))
      .catch((err: unknown) => this.log.warn({ err }, 'could not re-read a watched list'))
      .finally(() => {
        ws.listing = false;
        if (ws.listAgain) {
          ws.listAgain = false;
          this.refreshList(ws);
        }
      });
  }

  private sendListChanges(ws: Peer, list: readonly ConversationListItem[]): void {
    const watched = ws.watched;
    if (!watched || ws.readyState !== WebSocket.OPEN) return;
    const items: string[] = [];
    const listed = new Set<string>();
    for (const entry of list) {
      listed.add(entry.id);
      const json = JSON.stringify(entry);
      if (watched.get(entry.id) === json) continue;
      watched.set(entry.id, json);
      items.push(json);
    }
    for (const id of watched.keys()) {
      if (listed.has(id)) continue;
      watched.delete(id);
      items.push(JSON.stringify({ id, removed: true }));
    }
    if (items.length === 0 && ws.listPrimed) return;
    ws.listPrimed = true;
    if (items.length === 0) {
      this.sendText(ws, '{"type":"conversations","items":[]}');
      return;
    }
    // Frames stay within BUBBLE_WS_MAX_PAYLOAD: the changes are split across as many as needed.
    const open = '{"type":"conversations","items":[';
    let batch: string[] = [];
    let size = open.length + 2;
    for (const item of items) {
      if (batch.length > 0 && size + item.length + 1 > this.options.maxPayload) {
        this.sendText(ws, `${open}${batch.join(',')}]}`);
        batch = [];
        size = open.length + 2;
      }
      batch.push(item);
      size += item.length + 1;
    }
    if (batch.length > 0) this.sendText(ws, `${open}${batch.join(',')}]}`);
  }

  /**
   * Every frame goes through here: a connection whose unsent frames pass the bound is dropped
   * (a slow consumer), so no client can make the gateway buffer without limit.
   */
  private sendText(ws: Peer, text: string, ascii = false): void {
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

function refuse(
  socket: Duplex,
  status: number,
  code: string,
  message: string,
  headers: Record<string, string> = {},
): void {
  const body = JSON.stringify({ error: { code, message } });
  const reason =
    {
      400: 'Bad Request',
      401: 'Unauthorized',
      403: 'Forbidden',
      404: 'Not Found',
      429: 'Too Many Requests',
      503: 'Service Unavailable',
    }[status] ?? 'Error';
  const extra = Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${extra}Connection: close\r\n\r\n${body}`,
  );
}

/** An upgrade's socket while it counts against the gateway's admissions. */
type AdmittedSocket = Duplex & { admittedBy?: WsGateway | null };

function releaseAdmission(socket: AdmittedSocket): void {
  const gateway = socket.admittedBy;
  if (!gateway) return;
  socket.admittedBy = null;
  gateway.admitting--;
  socket.removeListener('close', onAdmittedClose);
}

function onAdmittedClose(this: Duplex): void {
  releaseAdmission(this as AdmittedSocket);
}

function destroySocket(this: Duplex): void {
  this.destroy();
}

const RESOLVED = Promise.resolve();

// The listeners of every connection (`this` is the socket).
function onPong(this: WebSocket): void {
  (this as Peer).alive = true;
}

function onError(this: WebSocket): void {
  this.terminate();
}

function onAuthTimeout(ws: Peer): void {
  ws.authTimer = null;
  // Timers run before the event loop reads sockets: behind a backlog (a reconnect storm) the
  // auth frame may have arrived in time and not be read yet. Decide after this loop's reads.
  setImmediate(closeUnauthenticated, ws);
}

function closeUnauthenticated(ws: Peer): void {
  // A frame being handled (ws.queue) is the auth frame, or closes the socket itself.
  if (!ws.user && ws.queue === null) ws.close(CLOSE.authFailed, 'no authentication within 5 s');
}
