import type { Duplex } from 'node:stream';
import { CLOSE, type Badge } from '@bubble/protocol';
import { WebSocket } from 'ws';
import { releaseAdmission, type AdmittedSocket } from './admission.js';
import type { HeldBadge } from './held-badge.js';
import type { BadgeListener } from './live-user.js';

/** What a connection calls on its gateway (WsGateway): declared here, so no import runs back. */
export interface PeerHost {
  send(ws: Peer, badge: HeldBadge): void;
  readonly lists: { badgeWhileWatching(ws: Peer, badge: Badge): void };
}

/**
 * One connection. The socket object itself carries the connection's state, and its listeners
 * are shared functions of the module (`this` is the socket): an idle connection costs the
 * gateway no closures, contexts or map entries of its own besides its place in `peers`.
 */
export class Peer extends WebSocket implements BadgeListener {
  gateway: PeerHost | null = null;
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
  /** Its close was handled: an attach that ends after it must be undone. */
  gone = false;

  onBadge(badge: HeldBadge): void {
    this.gateway?.send(this, badge);
    if (this.watched) this.gateway?.lists.badgeWhileWatching(this, badge.badge);
  }
}

// The listeners of every connection (`this` is the socket).
export function onPong(this: WebSocket): void {
  (this as Peer).alive = true;
}

export function onError(this: WebSocket): void {
  this.terminate();
}

export function onAuthTimeout(ws: Peer): void {
  ws.authTimer = null;
  // Timers run before the event loop reads sockets: behind a backlog (a reconnect storm) the
  // auth frame may have arrived in time and not be read yet. Decide after this loop's reads.
  setImmediate(closeUnauthenticated, ws);
}

function closeUnauthenticated(ws: Peer): void {
  // A frame being handled (ws.queue) is the auth frame, or closes the socket itself.
  if (!ws.user && ws.queue === null) {
    closeBeforeAdmission(ws, CLOSE.authFailed, 'no authentication within 5 s');
  }
}

/** How long a client that failed to authenticate has to answer the close frame. */
export const UNAUTHENTICATED_CLOSE_MS = 1000;

/**
 * Closes a connection that never authenticated: its place among the connections being
 * admitted is free at once (not when the client answers the close, 13–38 s later for one that
 * does not), and the socket is cut after UNAUTHENTICATED_CLOSE_MS without that answer.
 */
export function closeBeforeAdmission(ws: Peer, code: number, reason: string): void {
  if (ws.admission) releaseAdmission(ws.admission);
  ws.admission = null;
  ws.close(code, reason);
  setTimeout(terminate, UNAUTHENTICATED_CLOSE_MS, ws).unref();
}

function terminate(ws: Peer): void {
  if (ws.readyState !== WebSocket.CLOSED) ws.terminate();
}
