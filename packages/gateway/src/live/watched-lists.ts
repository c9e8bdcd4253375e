import type { BadgeService, ConversationListItem } from '@bubble/badges';
import { CLOSE, LIMITS, type Badge } from '@bubble/protocol';
import type { Logger } from 'pino';
import { WebSocket } from 'ws';
import type { Peer } from './peer.js';

/** The watched lists' safety refresh: a signal lost on the way is made good within it. */
export const WATCH_SAFETY_REFRESH_MS = 60_000;

/** The `what`s a `watch` frame may name. */
const WATCHABLE = new Set(['conversations']);

export interface WatchedListsOptions {
  service: Pick<BadgeService, 'conversationList' | 'gatewayLink'>;
  log: Logger;
  /** Frames stay within it: a list's changes are split across as many as needed. */
  maxPayload: number;
  /** See WsGatewayOptions.watchRefreshMs. */
  refreshMs: number;
  onListRead: (() => void) | undefined;
  /** Writes a frame to a connection (WsGateway.sendText). */
  send: (ws: Peer, text: string) => void;
}

/**
 * The conversation lists connections watch (`watch` frames): each is re-read when a list
 * signal or a badge whose conversation counts moved names its user, on a local read, and as a
 * safety net every `refreshMs`, and only the entries that changed are sent.
 */
export class WatchedLists {
  /** Connections that sent `watch`, by user (list signals name users). */
  private readonly watchers = new Map<string, Set<Peer>>();
  private readonly timer: NodeJS.Timeout | undefined;
  private stopSignals: (() => Promise<void>) | undefined;

  constructor(private readonly options: WatchedListsOptions) {
    if (options.refreshMs > 0) {
      this.timer = setInterval(() => this.refreshEveryList(), options.refreshMs);
      this.timer.unref();
    }
  }

  /** Subscribes to the list signals routed to gateway `gatewayId`. */
  async start(gatewayId: string): Promise<void> {
    if (this.stopSignals) return;
    this.stopSignals = await this.options.service.gatewayLink.subscribeLists(
      gatewayId,
      (users) => this.listsChanged(users),
      () => this.refreshEveryList(),
    );
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.stopSignals?.().catch(() => undefined);
  }

  /** A `watch` frame of an authenticated connection. */
  watch(ws: Peer, user: string, what: unknown): void {
    if (typeof what !== 'string' || !WATCHABLE.has(what)) {
      ws.close(CLOSE.policy, 'watch what: "conversations"');
      return;
    }
    if (!ws.watched) {
      ws.watched = new Map();
      // The list read now is at least as new as the last badge sent: a badge with the same
      // conversation counts need not read it again.
      if (ws.sent) ws.listedCounts = JSON.stringify(ws.sent.badge.conversations);
      let set = this.watchers.get(user);
      if (!set) this.watchers.set(user, (set = new Set()));
      set.add(ws);
    }
    this.refreshList(ws);
  }

  /** A connection closed: it watches no more. */
  unwatch(ws: Peer, user: string): void {
    ws.watched = null;
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
      .catch((err: unknown) => this.options.log.warn({ err }, 'could not re-read a watched list'))
      .finally(() => {
        ws.listing = false;
        if (ws.listAgain) {
          ws.listAgain = false;
          this.refreshList(ws);
        }
      });
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
    const { send, maxPayload } = this.options;
    if (items.length === 0) {
      send(ws, '{"type":"conversations","items":[]}');
      return;
    }
    // Frames stay within BUBBLE_WS_MAX_PAYLOAD: the changes are split across as many as needed.
    const open = '{"type":"conversations","items":[';
    let batch: string[] = [];
    let size = open.length + 2;
    for (const item of items) {
      if (batch.length > 0 && size + item.length + 1 > maxPayload) {
        send(ws, `${open}${batch.join(',')}]}`);
        batch = [];
        size = open.length + 2;
      }
      batch.push(item);
      size += item.length + 1;
    }
    if (batch.length > 0) send(ws, `${open}${batch.join(',')}]}`);
  }
}
