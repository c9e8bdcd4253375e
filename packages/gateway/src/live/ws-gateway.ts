import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { BadgeService } from '@bubble/core';
import { BubbleError, describeIssues, readRequestSchema, type Badge } from '@bubble/protocol';
import type { Logger } from 'pino';
import { WebSocket, WebSocketServer, type RawData } from 'ws';
import type { Authenticator } from '../auth.js';
import type { LoadMonitor } from '../load-monitor.js';
import { IpRateLimiter } from './ip-rate-limiter.js';
import type { LiveUsers } from './live-users.js';

export const CLOSE = {
  goingAway: 1001,
  policy: 1008,
  tooLarge: 1009,
  overloaded: 1013,
  authFailed: 4401,
  originNotAllowed: 4403,
} as const;

export interface WsGatewayOptions {
  service: BadgeService;
  auth: Authenticator;
  live: LiveUsers;
  load: LoadMonitor;
  logger: Logger;
  maxPayload: number;
  allowedOrigins?: readonly string[];
  maxConnections?: number;
  /** A connection whose unsent pushes exceed this is closed (slow consumer). */
  maxBufferedBytes?: number;
  authTimeoutMs?: number;
  heartbeatMs?: number;
  newConnectionsPerSecondPerIp?: number;
}

interface Peer {
  user: string | null;
  alive: boolean;
  /** The newest badge sent on this connection: nothing older follows it. */
  epoch: string | null;
  version: number;
  onBadge: (badge: Badge) => void;
  /** Frames of one connection are handled one after another, in order. */
  queue: Promise<void>;
}

/**
 * GET /v1/ws: authenticated sockets that receive their user's badge on every change, and carry
 * reads. Connections are what make a user online: the first opens presence, the last ends it.
 */
export class WsGateway {
  private readonly wss: WebSocketServer;
  private readonly peers = new Map<WebSocket, Peer>();
  private readonly limiter: IpRateLimiter;
  private readonly log: Logger;
  private heartbeat: NodeJS.Timeout | undefined;
  private draining = false;

  constructor(
    server: Server,
    private readonly options: WsGatewayOptions,
  ) {
    this.log = options.logger.child({ module: 'ws-gateway' });
    this.limiter = new IpRateLimiter(options.newConnectionsPerSecondPerIp ?? 20, 50);
    this.wss = new WebSocketServer({
      noServer: true,
      maxPayload: options.maxPayload,
      perMessageDeflate: false,
      clientTracking: false,
    });
    server.on('upgrade', (req, socket, head) => void this.upgrade(req, socket, head));
    this.heartbeat = setInterval(() => this.ping(), options.heartbeatMs ?? 30_000);
    this.heartbeat.unref();
  }

  get connections(): number {
    return this.peers.size;
  }

  /** Tells every client to reconnect elsewhere (1001) and stops accepting. */
  async close(): Promise<void> {
    this.draining = true;
    clearInterval(this.heartbeat);
    for (const ws of this.peers.keys()) ws.close(CLOSE.goingAway, 'draining');
    const deadline = Date.now() + 2000;
    while (this.peers.size > 0 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    for (const ws of this.peers.keys()) ws.terminate();
    this.wss.close();
  }

  private async upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    // node:http hands over an upgrade's socket without an 'error' listener: a client that resets
    // while its token is checked or while it is refused must not crash the process.
    // (A function of the module, not a closure: a closure here would share this call's scope
    // and keep the upgrade request, token included, alive as long as the socket.)
    socket.on('error', destroySocket);
    const path = (req.url ?? '').split('?')[0];
    if (path !== '/v1/ws') return refuse(socket, 404, 'UB_ERR_NOT_FOUND', 'no WebSocket here');
    if (this.draining) return refuse(socket, 503, 'UB_ERR_UNAVAILABLE', 'draining');
    const ip = req.socket.remoteAddress ?? 'unknown';
    if (!this.limiter.take(ip)) {
      return refuse(
        socket,
        429,
        'UB_ERR_RATE_LIMITED',
        'too many new connections from this address',
      );
    }
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
    this.wss.handleUpgrade(req, socket, head, (ws) => this.accept(ws, req, user));
  }

  private accept(ws: WebSocket, req: IncomingMessage, user: string | null): void {
    const origin = req.headers.origin;
    const allowed = this.options.allowedOrigins;
    if (origin !== undefined && allowed && allowed.length > 0 && !allowed.includes(origin)) {
      ws.close(CLOSE.originNotAllowed, 'origin not allowed');
      return;
    }
    const max = this.options.maxConnections ?? 100_000;
    if (this.peers.size >= max || this.options.load.overloaded()) {
      ws.close(CLOSE.overloaded, 'overloaded');
      return;
    }
    const peer: Peer = {
      user: null,
      alive: true,
      epoch: null,
      version: 0,
      onBadge: (badge) => this.send(ws, peer, badge),
      queue: Promise.resolve(),
    };
    this.peers.set(ws, peer);
    ws.on('pong', () => (peer.alive = true));
    ws.on('error', () => ws.terminate());
    ws.on('close', () => {
      this.peers.delete(ws);
      if (peer.user) void this.options.live.detach(peer.user, peer.onBadge);
    });
    ws.on('message', (data, isBinary) => {
      peer.queue = peer.queue.then(() => this.receive(ws, peer, data, isBinary));
    });
    if (user) {
      void this.authenticated(ws, peer, user);
      return;
    }
    const timer = setTimeout(() => {
      if (!peer.user) ws.close(CLOSE.authFailed, 'no authentication within 5 s');
    }, this.options.authTimeoutMs ?? 5000);
    timer.unref();
    ws.once('close', () => clearTimeout(timer));
  }

  private async authenticated(ws: WebSocket, peer: Peer, user: string): Promise<void> {
    peer.user = user;
    try {
      const badge = await this.options.live.attach(user, peer.onBadge);
      this.send(ws, peer, badge);
    } catch (err) {
      this.log.warn({ err }, 'could not compute the badge of a new connection');
      ws.close(CLOSE.overloaded, 'try again');
    }
  }

  private async receive(
    ws: WebSocket,
    peer: Peer,
    data: RawData,
    isBinary: boolean,
  ): Promise<void> {
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
      if (peer.user || typeof token !== 'string') {
        ws.close(peer.user ? CLOSE.policy : CLOSE.authFailed, 'unexpected auth');
        return;
      }
      try {
        const user = await this.options.auth.verifyToken(token);
        await this.authenticated(ws, peer, user);
      } catch {
        ws.close(CLOSE.authFailed, 'authentication failed');
      }
      return;
    }
    if (!peer.user) {
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
      const badge = await this.options.service.read(peer.user, parsed.data);
      this.send(ws, peer, badge, true);
      this.options.live.publishLocal(badge);
    } catch (err) {
      this.sendError(
        ws,
        err instanceof BubbleError ? err : new BubbleError('UB_ERR_INTERNAL', 'read failed'),
      );
    }
  }

  /** Never sends an older version than the last one; `answer` re-sends the same one (a read). */
  private send(ws: WebSocket, peer: Peer, badge: Badge, answer = false): void {
    if (ws.readyState !== WebSocket.OPEN) return;
    if (peer.epoch === badge.epoch) {
      if (badge.version < peer.version || (badge.version === peer.version && !answer)) return;
    }
    peer.epoch = badge.epoch;
    peer.version = badge.version;
    this.sendText(ws, JSON.stringify({ type: 'badge', badge }));
  }

  /**
   * Every frame goes through here: a connection whose unsent frames pass the bound is dropped
   * (a slow consumer), so no client can make the gateway buffer without limit.
   */
  private sendText(ws: WebSocket, text: string): void {
    if (ws.readyState !== WebSocket.OPEN) return;
    if (ws.bufferedAmount > (this.options.maxBufferedBytes ?? 256 * 1024)) {
      // The close frame would queue behind the backlog: ask politely, then cut it off.
      ws.close(CLOSE.overloaded, 'too slow to keep up');
      setTimeout(() => ws.terminate(), 1000).unref();
      return;
    }
    ws.send(text);
  }

  private sendError(ws: WebSocket, error: BubbleError): void {
    this.sendText(ws, JSON.stringify({ type: 'error', code: error.code, message: error.message }));
  }

  private ping(): void {
    for (const [ws, peer] of this.peers) {
      if (!peer.alive) {
        ws.terminate();
        continue;
      }
      peer.alive = false;
      ws.ping();
    }
  }
}

function refuse(socket: Duplex, status: number, code: string, message: string): void {
  const body = JSON.stringify({ error: { code, message } });
  const reason =
    { 401: 'Unauthorized', 404: 'Not Found', 429: 'Too Many Requests', 503: 'Service Unavailable' }[
      status
    ] ?? 'Error';
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

function destroySocket(this: Duplex): void {
  this.destroy();
}
