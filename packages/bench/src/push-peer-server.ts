/**
 * A push server `push-peers` compares bubble's gateway with (a driver process): `socketio`, a
 * Socket.IO 4 server with `@socket.io/redis-adapter` and one room per user, or `ws`, a bare `ws`
 * server. Both read the stream of badge changes from Redis (PUBLISH on PEER_CHANGES_CHANNEL, one
 * message of changed badges a tick) and push each to its user. Written as well as each design
 * allows: the changes of a user conflate while they wait (newest wins, as bubble's gateway does),
 * waiting users are served in the order they connected from a cursor that goes round (the
 * order bubble's gateway writes in, which the kernel writes fastest: PushRing), and frames go
 * out in slices between which I/O runs.
 */
import { createServer } from 'node:http';
import { createAdapter } from '@socket.io/redis-adapter';
import { PushRing } from '@bubble/gateway';
import { makeBadge, type Badge } from '@bubble/protocol';
import { Redis } from 'ioredis';
import { Server as SocketIoServer } from 'socket.io';
import { WebSocketServer, type WebSocket } from 'ws';
import { serveDriver } from './driver-process.js';

export const PEER_CHANGES_CHANNEL = 'peers:badge-changes';

export type PeerKind = 'socketio' | 'ws';

/** A badge with `feed` unread, as bubble's gateway would send it. */
export function peerBadge(user: string, feed: number, version: number): Badge {
  const counts = {
    feed,
    notices: 0,
    conversations: {},
    conversationsTotal: 0,
    reddots: [],
    counters: {},
  };
  return makeBadge(user, counts, { epoch: 'peers001', version }, Date.now(), 99);
}

/** Frames sent per turn of the event loop, as the gateway and the ws-ceiling sender do. */
const SLICE = 512;

const clients: Redis[] = [];
let sendTo: ((user: string, badge: Badge) => boolean) | undefined;
/** A connected user, with the newest badge waiting to be sent to them. */
interface Waiting {
  user: string;
  slot: number;
  badge: Badge | null;
}
/** Connected users, their slots (PushRing, as bubble's gateway) in the order they connected. */
const users = new Map<string, Waiting>();
const ring = new PushRing<Waiting>();
let scheduled = false;
let sent = 0;

serveDriver({
  listen: (args: { kind: PeerKind; redisUrl: string }) => listen(args.kind, args.redisUrl),
  sent: () => sent,
  stop: async () => {
    for (const client of clients) client.disconnect();
  },
});

async function listen(kind: PeerKind, redisUrl: string): Promise<number> {
  const http = createServer();
  if (kind === 'socketio') {
    const pub = new Redis(redisUrl);
    const sub = pub.duplicate();
    clients.push(pub, sub);
    const io = new SocketIoServer(http, {
      transports: ['websocket'],
      perMessageDeflate: false,
      httpCompression: false,
      serveClient: false,
      adapter: createAdapter(pub, sub),
    });
    io.on('connection', (socket) => {
      const user = String(socket.handshake.query.user);
      slotFor(user);
      void socket.join(`u:${user}`);
      socket.emit('badge', peerBadge(user, 0, 0));
    });
    sendTo = (user, badge) => {
      io.to(`u:${user}`).emit('badge', badge);
      return true;
    };
  } else {
    const sockets = new Map<string, WebSocket>();
    const wss = new WebSocketServer({ server: http, perMessageDeflate: false });
    wss.on('connection', (ws, request) => {
      const user = new URL(request.url ?? '/', 'http://peer').searchParams.get('user') ?? '';
      sockets.set(user, ws);
      slotFor(user);
      ws.on('close', () => sockets.delete(user));
      ws.send(JSON.stringify({ type: 'badge', badge: peerBadge(user, 0, 0) }));
    });
    sendTo = (user, badge) => {
      const ws = sockets.get(user);
      if (!ws) return false;
      ws.send(JSON.stringify({ type: 'badge', badge }));
      return true;
    };
  }
  const changes = new Redis(redisUrl);
  clients.push(changes);
  await changes.subscribe(PEER_CHANGES_CHANNEL);
  changes.on('message', (_channel: string, message: string) => {
    for (const badge of JSON.parse(message) as Badge[]) {
      const waiting = users.get(badge.user);
      if (waiting === undefined) continue;
      waiting.badge = badge;
      ring.mark(waiting.slot);
    }
    schedule();
  });
  return new Promise((resolve, reject) => {
    http.once('error', reject);
    http.listen(0, '127.0.0.1', () => resolve((http.address() as { port: number }).port));
  });
}

function slotFor(user: string): void {
  if (users.has(user)) return;
  const waiting: Waiting = { user, slot: -1, badge: null };
  waiting.slot = ring.claim(waiting);
  users.set(user, waiting);
}

function schedule(): void {
  if (scheduled || ring.pending === 0) return;
  scheduled = true;
  setImmediate(slice);
}

function slice(): void {
  scheduled = false;
  for (let n = 0; n < SLICE; n++) {
    const waiting = ring.next();
    if (waiting === undefined) return;
    const badge = waiting.badge!;
    waiting.badge = null;
    if (sendTo!(waiting.user, badge)) sent++;
  }
  schedule();
}
