/**
 * A driver process (forkDriver) holding many real SDK clients (`@bubble/client`'s BubbleClient,
 * its own reconnect and backoff logic, on the `ws` WebSocket), each on a loopback source address
 * of its own group (sourceAddress). Used by the reconnect storm test and `bench soak`.
 *
 * It records from its clients' own clock: every socket the SDK opens (an attempt), every time a
 * client gets back to `open` (its first badge on a socket), and how attempts that never got a
 * badge were answered (HTTP status of a refused upgrade, close code of a socket closed before its
 * first badge). For push latency the parent announces each answered post (its author and answer
 * time): the client following that author must show a feed count that includes it.
 */
import { BubbleClient, type Badge } from '@bubble/client';
import { WebSocket } from 'ws';
import { serveDriver } from './driver-process.js';
import { mintJwt, sourceAddress, wallNow } from './identity.js';

export interface SdkStartArgs {
  /** Gateway base URLs (http://…), in the order every client tries them. */
  urls: string[];
  users: string[];
  /** Global index of users[0]: picks the source addresses. */
  firstIndex: number;
  perAddress: number;
  jwtSecret: string;
  /** The author index each client follows (its only follow), for latency. */
  authorOf?: Int32Array;
  /** SDK options; the SDK's defaults when absent. */
  backoffBaseMs?: number;
  backoffMaxMs?: number;
}

export interface SdkWindow {
  /** Wall-clock ms of every socket the SDK opened since the mark. */
  attempts: Float64Array;
  /** Wall-clock ms of every return to `open` since the mark. */
  backs: Float64Array;
  /** Refused upgrades by HTTP status, since the mark. */
  refused: Record<string, number>;
  /**
   * Sockets closed before their first badge, by close code, since the mark (1005 and 1006 are
   * the client's own: its connect timeout, or a connection lost before any close frame).
   */
  closedEarly: Record<string, number>;
  /** Other socket errors since the mark (by message). */
  errors: Record<string, number>;
}

export interface SdkProgress {
  open: number;
  /** Open clients per gateway (index in the urls). */
  onGateway: number[];
  /** Clients that lost their open socket since the mark. */
  lost: number;
  /** Of those, the ones open again. */
  back: number;
}

export interface SdkBadges {
  users: string[];
  open: Uint8Array;
  epochs: string[];
  versions: Int32Array;
  feeds: Int32Array;
}

export interface SdkLatency {
  /** Latency histogram since the last call: bucket i counts pushes of i ms (the last: ≥ 60 s). */
  histogram: Uint32Array;
  samples: number;
  /** Announced posts whose push had not arrived, on open clients, older than 30 s. */
  overdue: number;
}

const HISTOGRAM_BUCKETS = 60_001;
const OVERDUE_MS = 30_000;
/** Clients started per 100 ms. */
const START_BATCH = 100;

let args: SdkStartArgs;
let clients: BubbleClient[] = [];
let running = new Uint8Array(0);
let openNow = new Uint8Array(0);
let feeds = new Int32Array(0);
/** Per client: announced posts not yet shown, as [feed target, answerAt] pairs. */
let waiting: number[][] = [];
/** Per client: posts announced since it opened (the target of the next one is base + this). */
let baseFeed = new Int32Array(0);
let announcedSinceOpen = new Int32Array(0);
let followersOf = new Map<number, number[]>();

/** Per client: when it last got back to `open` since the mark (0: not yet). */
let backAt = new Float64Array(0);
/** Per client: lost its open socket since the mark. */
let lost = new Uint8Array(0);
/** Per client: the gateway (index in args.urls) of its latest socket. */
let gatewayOf = new Uint8Array(0);
let attempts: number[] = [];
let backs: number[] = [];
let refused: Record<string, number> = {};
let closedEarly: Record<string, number> = {};
let errors: Record<string, number> = {};
let histogram = new Uint32Array(HISTOGRAM_BUCKETS);
let samples = 0;

const bump = (counts: Record<string, number>, key: string) => {
  counts[key] = (counts[key] ?? 0) + 1;
};

serveDriver({
  start: (a: SdkStartArgs) => start(a),
  mark: () => mark(),
  progress: () => progress(),
  window: () => window(),
  badges: () => badges(),
  post: (a: { author: number; answerAt: number }) => announce(a.author, a.answerAt),
  latency: () => latency(),
  churn: (a: { count: number }) => churn(a.count),
  end: (a: { count: number }) => end(a.count),
  close: () => closeAll(),
});

/** The `ws` WebSocket from client `i`'s source address, noting attempts and refusals. */
function socketClass(i: number) {
  const localAddress = sourceAddress(args.firstIndex + i, args.perAddress);
  return class extends WebSocket {
    private badged = false;
    constructor(url: string) {
      super(url, { localAddress, perMessageDeflate: false, handshakeTimeout: 30_000 });
      attempts.push(wallNow());
      gatewayOf[i] = Math.max(
        0,
        args.urls.findIndex((base) => url.startsWith(base.replace(/^http/, 'ws'))),
      );
      this.on('message', () => (this.badged = true));
      this.on('error', (err: Error) => {
        const status = /Unexpected server response: (\d+)/.exec(err.message)?.[1];
        if (status) bump(refused, status);
        else bump(errors, err.message.slice(0, 60));
      });
      this.on('close', (code: number) => {
        if (!this.badged) bump(closedEarly, String(code));
      });
    }
  };
}

let tokens = 0;

function startClient(i: number): void {
  const client = new BubbleClient({
    url: args.urls,
    // As an app does: a fresh token for every connection (an auth timeout under load closes
    // with 4401, after which the SDK wants a token other than the refused one).
    getToken: async () => mintJwt(args.jwtSecret, args.users[i]!, 6 * 3600 + tokens++),
    WebSocket: socketClass(i),
    // No HTTP: a client must come back over its socket (polling would hide a failed storm).
    fetch: undefined,
    backoffBaseMs: args.backoffBaseMs,
    backoffMaxMs: args.backoffMaxMs,
    pollAfterFailures: Number.MAX_SAFE_INTEGER,
  });
  client.on('state', (state) => {
    const open = state === 'open';
    if (open && !openNow[i]) {
      backs.push((backAt[i] = wallNow()));
      waiting[i] = [];
      announcedSinceOpen[i] = 0;
      // 'open' comes just before the socket's first badge is taken (same tick): count from it.
      queueMicrotask(() => {
        baseFeed[i] = client.badge?.feed ?? 0;
        feeds[i] = baseFeed[i]!;
      });
    }
    if (!open && openNow[i]) lost[i] = 1;
    openNow[i] = open ? 1 : 0;
  });
  client.on('badge', (badge: Badge) => onBadge(i, badge));
  client.on('error', (err) => bump(errors, `sdk ${err.message.slice(0, 60)}`));
  clients[i] = client;
  running[i] = 1;
  client.start();
}

async function start(a: SdkStartArgs): Promise<number> {
  args = a;
  const n = a.users.length;
  clients = new Array<BubbleClient>(n);
  running = new Uint8Array(n);
  openNow = new Uint8Array(n);
  backAt = new Float64Array(n);
  lost = new Uint8Array(n);
  gatewayOf = new Uint8Array(n);
  feeds = new Int32Array(n);
  baseFeed = new Int32Array(n);
  announcedSinceOpen = new Int32Array(n);
  waiting = Array.from({ length: n }, () => []);
  followersOf = new Map();
  if (a.authorOf) {
    a.authorOf.forEach((author, c) => {
      const list = followersOf.get(author);
      if (list) list.push(c);
      else followersOf.set(author, [c]);
    });
  }
  // Apps open over time, not in one instant (the storms are what the scenarios make).
  for (let i = 0; i < n; i++) {
    startClient(i);
    if (i % START_BATCH === START_BATCH - 1) await new Promise((r) => setTimeout(r, 100));
  }
  return n;
}

function onBadge(i: number, badge: Badge): void {
  const at = wallNow();
  feeds[i] = badge.feed;
  const queue = waiting[i]!;
  while (queue.length > 0 && queue[0]! <= badge.feed) {
    record(at - queue[1]!);
    queue.splice(0, 2);
  }
}

function announce(author: number, answerAt: number): void {
  for (const c of followersOf.get(author) ?? []) {
    if (!openNow[c]) continue;
    const target = baseFeed[c]! + ++announcedSinceOpen[c]!;
    if (feeds[c]! >= target) record(Math.max(0, wallNow() - answerAt));
    else waiting[c]!.push(target, answerAt);
  }
}

function record(ms: number): void {
  samples++;
  histogram[Math.min(HISTOGRAM_BUCKETS - 1, Math.max(0, Math.round(ms)))]!++;
}

function latency(): SdkLatency {
  const now = wallNow();
  let overdue = 0;
  waiting.forEach((queue, c) => {
    if (!openNow[c]) return;
    for (let k = 1; k < queue.length; k += 2) if (now - queue[k]! > OVERDUE_MS) overdue++;
  });
  const result = { histogram, samples, overdue };
  histogram = new Uint32Array(HISTOGRAM_BUCKETS);
  samples = 0;
  return result;
}

/** Clients open now (in all, per gateway), lost since the mark, and of those back. */
function progress(): SdkProgress {
  const onGateway = new Array<number>(args.urls.length).fill(0);
  let open = 0;
  let lostCount = 0;
  let back = 0;
  for (let i = 0; i < openNow.length; i++) {
    if (lost[i]) lostCount++;
    if (!openNow[i]) continue;
    open++;
    onGateway[gatewayOf[i]!]!++;
    if (lost[i] && backAt[i]! > 0) back++;
  }
  return { open, onGateway, lost: lostCount, back };
}

function mark(): void {
  backAt.fill(0);
  lost.fill(0);
  attempts = [];
  backs = [];
  refused = {};
  closedEarly = {};
  errors = {};
}

function window(): SdkWindow {
  return {
    attempts: Float64Array.from(attempts),
    backs: Float64Array.from(backs),
    refused,
    closedEarly,
    errors,
  };
}

function badges(): SdkBadges {
  const n = clients.length;
  const versions = new Int32Array(n);
  const epochs: string[] = [];
  for (let i = 0; i < n; i++) {
    const badge = running[i] ? clients[i]!.badge : undefined;
    versions[i] = badge?.version ?? -1;
    epochs.push(badge?.epoch ?? '');
  }
  return { users: args.users, open: Uint8Array.from(openNow), epochs, versions, feeds };
}

/** Clients of `running` that are open, `count` of them at random. */
function pickOpen(count: number): number[] {
  const open: number[] = [];
  for (let i = 0; i < clients.length; i++) if (running[i] && openNow[i]) open.push(i);
  for (let k = 0; k < Math.min(count, open.length); k++) {
    const j = k + Math.floor(Math.random() * (open.length - k));
    [open[k], open[j]] = [open[j]!, open[k]!];
  }
  return open.slice(0, count);
}

/** `count` open clients close their app and open it again (a new SDK client, same user). */
function churn(count: number): number {
  const picked = pickOpen(count);
  for (const i of picked) {
    clients[i]!.close();
    openNow[i] = 0;
    startClient(i);
  }
  return picked.length;
}

/** `count` open clients close for good: their users must go offline. */
function end(count: number): string[] {
  const picked = pickOpen(count);
  for (const i of picked) {
    clients[i]!.close();
    running[i] = 0;
    openNow[i] = 0;
  }
  return picked.map((i) => args.users[i]!);
}

function closeAll(): number {
  let n = 0;
  for (let i = 0; i < clients.length; i++) {
    if (running[i]) n++;
    clients[i]?.close();
    running[i] = 0;
  }
  return n;
}
