/**
 * A driver process (forkDriver) holding many authenticated WebSocket clients of one gateway.
 * Used idle by `connections`, and by `latency` to time each badge frame against the ingest call
 * that caused it: the parent announces every answered ingest call (its answer time and the
 * authors of its posts); from the follow graph the driver knows which of its clients that call
 * changes and by how much, so the frame that first shows the new count is the push.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { CLOSE } from '@bubble/protocol';
import { WebSocket } from 'ws';
import { serveDriver } from './driver-process.js';
import { mintJwt, sourceAddress, wallNow } from './identity.js';

export interface WsConnectArgs {
  /** ws://127.0.0.1:<port>/v1/ws */
  url: string;
  users: string[];
  /** Global index of users[0]: picks the source addresses. */
  firstIndex: number;
  perAddress: number;
  jwtSecret: string;
  /** Connections being opened at any moment. */
  concurrency: number;
  /** Bound on opening them all. */
  seconds: number;
  /** For latency: the authors each client follows (indices), and how many authors exist. */
  follows?: Int32Array[];
  authors?: number;
  /**
   * A push-peers server instead of a gateway: `ws` takes the user from the query string;
   * `socketio` is spoken to in Engine.IO 4 / Socket.IO 5 protocol over a plain `ws` socket
   * (open, namespace connect, ping answered with pong; events are `42["badge",{…}]`), so the
   * driver's cost per frame is the same for every server.
   */
  peer?: 'ws' | 'socketio';
}

export interface WsConnectResult {
  connected: number;
  failed: number;
  /** Attempts repeated after a 1013 close or a 429/503 answer. */
  retries: number;
  errors: Record<string, number>;
  seconds: number;
}

export interface WsBatch {
  /** When the ingest call was answered, on this process's clock (wallNow). */
  answerAt: number;
  /** Author index of every post of the call (repeated for several posts). */
  authors: Int32Array;
  measure: boolean;
}

export interface WsReport {
  /** Latency histogram: bucket i counts pushes of i/10 ms (the last one: ≥ 30 s). */
  histogram: Uint32Array;
  samples: number;
  /**
   * The same for the first change of a quiet client (no frame for QUIET_MS before the call's
   * answer): what a person watching an idle badge feels.
   */
  quietHistogram: Uint32Array;
  quietSamples: number;
  /** Pushes that arrived before the parent saw the ingest call's answer (counted as 0 ms). */
  beforeAnswer: number;
  /** Measured (call, client) pairs whose push had not arrived when the report was made. */
  undelivered: number;
  /** Users (up to 20) with measured pushes that never arrived. */
  stuckUsers: string[];
  /** Frames whose feed count went down (none expected: nothing expires or is read). */
  decreases: number;
  frames: number;
  framesMeasured: number;
  measuredSeconds: number;
  closes: Record<string, number>;
  open: number;
  lag: { p50Ms: number; p99Ms: number; maxMs: number };
  cpuSeconds: number;
}

const BUCKETS_PER_MS = 10;
const HISTOGRAM_BUCKETS = 30_000 * BUCKETS_PER_MS + 1;
const FEED_KEY = Buffer.from('"feed":');
/** A client that has had no frame for this long is quiet; its next change is timed apart. */
const QUIET_MS = 1000;
/** `waiting` entries: not measured, measured, measured and the first change of a quiet client. */
const MEASURED = 1;
const MEASURED_QUIET = 2;
const RETRIED = new RegExp(`^closed ${CLOSE.overloaded}$|: (429|503)$|ECONNRESET`);

const log = serveDriver({
  connect: (args: WsConnectArgs) => connectAll(args),
  clock: () => wallNow(),
  batch: (args: WsBatch) => announce(args),
  measure: (args: { on: boolean }) => setMeasuring(args.on),
  report: () => report(),
  pending: () => undelivered(),
  frames: () => frames,
  close: () => closeAll(),
  reset: () => resetFigures(),
});

let sockets: WebSocket[] = [];
let users: string[] = [];
/** Per client: feed count of its first frame (-1 before it), of its latest frame. */
let first = new Int32Array(0);
let latest = new Int32Array(0);
/** Per client: posts announced that change its count, in all. */
let announced = new Int32Array(0);
/** Per client: announced calls not yet seen, as [target count, answerAt, measured] triples. */
let waiting: [target: number, answerAt: number, measured: number][][] = [];
/** Per client: frames ahead of the announcements, as [count, arrivedAt, previous frame at]. */
let ahead: number[][] = [];
/** Per client: when its latest frame arrived (wallNow). */
let lastFrameAt = new Float64Array(0);
/** Followers (client indices) of each author: CSR offsets and list. */
let offsets = new Int32Array(0);
let followers = new Int32Array(0);
let touchedCount = new Int32Array(0);

const histogram = new Uint32Array(HISTOGRAM_BUCKETS);
let samples = 0;
const quietHistogram = new Uint32Array(HISTOGRAM_BUCKETS);
let quietSamples = 0;
let beforeAnswer = 0;
let decreases = 0;
let frames = 0;
let framesMeasured = 0;
let measuring = false;
let measureStarted = 0;
let measuredMs = 0;
let cpuAtStart: NodeJS.CpuUsage | null = null;
let cpuSeconds = 0;
let stopping = false;
const closes: Record<string, number> = {};
const lagHistogram = monitorEventLoopDelay({ resolution: 10 });

async function connectAll(args: WsConnectArgs): Promise<WsConnectResult> {
  const n = args.users.length;
  users = args.users;
  sockets = new Array<WebSocket>(n);
  first = new Int32Array(n).fill(-1);
  latest = new Int32Array(n);
  announced = new Int32Array(n);
  waiting = Array.from({ length: n }, () => []);
  ahead = Array.from({ length: n }, () => []);
  lastFrameAt = new Float64Array(n);
  stopping = false;
  if (args.follows) buildFollowers(args.follows, args.authors ?? 0);
  const errors: Record<string, number> = {};
  const started = performance.now();
  const deadline = started + args.seconds * 1000;
  let next = 0;
  let connected = 0;
  let failed = 0;
  let lastLog = started;
  let retries = 0;
  const worker = async () => {
    while (next < n && performance.now() < deadline) {
      const i = next++;
      let error = await open(args, i, deadline);
      // As a client should (docs/protocol.md): 1013 and 429 mean reconnect with backoff.
      for (let attempt = 0; error !== null && RETRIED.test(error) && attempt < 5; attempt++) {
        retries++;
        await new Promise((resolve) =>
          setTimeout(resolve, 250 * 2 ** attempt * (1 + Math.random())),
        );
        error = await open(args, i, deadline);
      }
      if (error === null) connected++;
      else {
        failed++;
        errors[error] = (errors[error] ?? 0) + 1;
      }
      if (performance.now() - lastLog > 5000) {
        lastLog = performance.now();
        log(`${connected} of ${n} connected (${failed} failed, ${retries} retried)`);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(args.concurrency, n) }, worker));
  return { connected, failed, retries, errors, seconds: (performance.now() - started) / 1000 };
}

/** Opens client `i`; resolves null once its first badge frame arrived, else why it failed. */
function open(args: WsConnectArgs, i: number, deadline: number): Promise<string | null> {
  return new Promise((resolve) => {
    let settled = false;
    const settle = (error: string | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(error);
    };
    const token = mintJwt(args.jwtSecret, args.users[i]!, 3 * 3600);
    const user = encodeURIComponent(args.users[i]!);
    const url =
      args.peer === 'socketio'
        ? `${args.url}/socket.io/?EIO=4&transport=websocket&user=${user}`
        : args.peer === 'ws'
          ? `${args.url}/?user=${user}`
          : args.url;
    const engineIo = args.peer === 'socketio';
    const ws = new WebSocket(url, {
      headers: { authorization: `Bearer ${token}` },
      localAddress: sourceAddress(args.firstIndex + i, args.perAddress),
      perMessageDeflate: false,
      skipUTF8Validation: true,
      handshakeTimeout: 30_000,
    });
    sockets[i] = ws;
    const timer = setTimeout(
      () => {
        settle('no badge frame in time');
        ws.terminate();
      },
      Math.max(1000, deadline - performance.now()),
    );
    ws.on('message', (data: Buffer) => {
      // Engine.IO: "0{…}" opens (join the default namespace), "2" is a ping.
      if (engineIo && data.length > 0 && data[0] !== 0x34) {
        if (data[0] === 0x30) ws.send('40');
        else if (data[0] === 0x32) ws.send('3');
        return;
      }
      onFrame(i, data);
      if (first[i]! >= 0) settle(null);
    });
    ws.on('error', (err) => settle(err.message.slice(0, 80)));
    ws.on('close', (code) => {
      settle(`closed ${code}`);
      if (!stopping) closes[String(code)] = (closes[String(code)] ?? 0) + 1;
    });
  });
}

function buildFollowers(follows: Int32Array[], authors: number): void {
  offsets = new Int32Array(authors + 1);
  for (const list of follows) for (const a of list) offsets[a + 1]!++;
  for (let a = 0; a < authors; a++) offsets[a + 1]! += offsets[a]!;
  followers = new Int32Array(offsets[authors]!);
  const fill = offsets.slice(0, authors);
  follows.forEach((list, c) => {
    for (const a of list) followers[fill[a]!++] = c;
  });
  touchedCount = new Int32Array(follows.length);
}

function onFrame(i: number, data: Buffer): void {
  const at = wallNow();
  const previousFrameAt = lastFrameAt[i]!;
  lastFrameAt[i] = at;
  frames++;
  if (measuring) framesMeasured++;
  const key = data.indexOf(FEED_KEY);
  if (key < 0) return;
  let feed = 0;
  for (let k = key + FEED_KEY.length; k < data.length; k++) {
    const c = data[k]!;
    if (c < 48 || c > 57) break;
    feed = feed * 10 + c - 48;
  }
  if (first[i]! < 0) {
    first[i] = feed;
    latest[i] = feed;
    return;
  }
  if (feed < latest[i]!) decreases++;
  latest[i] = feed;
  const seen = feed - first[i]!;
  const queue = waiting[i]!;
  while (queue.length > 0 && queue[0]![0]! <= seen) {
    const [, answerAt, measured] = queue.shift()!;
    if (measured !== 0) record(at - answerAt, measured === MEASURED_QUIET);
  }
  if (seen > announced[i]!) {
    const early = ahead[i]!;
    early.push(seen, at, previousFrameAt);
  }
}

/** An answered ingest call: which clients it changes, and the count each must reach. */
function announce(batch: WsBatch): void {
  const touched: number[] = [];
  for (const a of batch.authors) {
    for (let k = offsets[a]!; k < offsets[a + 1]!; k++) {
      const c = followers[k]!;
      if (touchedCount[c] === 0) touched.push(c);
      touchedCount[c]!++;
    }
  }
  for (const c of touched) {
    const target = (announced[c]! += touchedCount[c]!);
    touchedCount[c] = 0;
    if (first[c]! < 0) continue;
    const early = ahead[c]!;
    let e = 0;
    while (e < early.length && early[e]! < target) e += 3;
    if (e < early.length) {
      // The push came first: its frame was received before this call's answer was.
      if (batch.measure) {
        beforeAnswer++;
        const quiet = e === 0 && batch.answerAt - early[e + 2]! >= QUIET_MS;
        record(Math.max(0, early[e + 1]! - batch.answerAt), quiet);
      }
      early.splice(0, e);
    } else {
      early.length = 0;
      const queue = waiting[c]!;
      const quiet = queue.length === 0 && batch.answerAt - lastFrameAt[c]! >= QUIET_MS;
      queue.push([target, batch.answerAt, batch.measure ? (quiet ? MEASURED_QUIET : MEASURED) : 0]);
    }
  }
}

function record(ms: number, quiet: boolean): void {
  samples++;
  const bucket = Math.min(HISTOGRAM_BUCKETS - 1, Math.max(0, Math.round(ms * BUCKETS_PER_MS)));
  histogram[bucket]!++;
  if (quiet) {
    quietSamples++;
    quietHistogram[bucket]!++;
  }
}

/** Zeroes every figure, so the same process can measure another server (the ceiling). */
function resetFigures(): void {
  histogram.fill(0);
  quietHistogram.fill(0);
  samples = quietSamples = beforeAnswer = decreases = frames = framesMeasured = 0;
  measuredMs = cpuSeconds = 0;
  for (const code of Object.keys(closes)) delete closes[code];
}

function setMeasuring(on: boolean): void {
  if (on === measuring) return;
  measuring = on;
  if (on) {
    measureStarted = performance.now();
    cpuAtStart = process.cpuUsage();
    lagHistogram.reset();
    lagHistogram.enable();
  } else {
    measuredMs += performance.now() - measureStarted;
    const used = process.cpuUsage(cpuAtStart ?? undefined);
    cpuSeconds += (used.user + used.system) / 1e6;
    lagHistogram.disable();
  }
}

function undelivered(): number {
  let n = 0;
  for (const queue of waiting) for (const entry of queue) if (entry[2] !== 0) n++;
  return n;
}

function report(): WsReport {
  const ms = (ns: number) => Math.round(ns / 1e4) / 100;
  let open = 0;
  for (const ws of sockets) if (ws?.readyState === WebSocket.OPEN) open++;
  return {
    histogram,
    samples,
    quietHistogram,
    quietSamples,
    beforeAnswer,
    undelivered: undelivered(),
    stuckUsers: users.filter((_, c) => waiting[c]!.some((entry) => entry[2] !== 0)).slice(0, 20),
    decreases,
    frames,
    framesMeasured,
    measuredSeconds: measuredMs / 1000,
    closes,
    open,
    lag: {
      p50Ms: ms(lagHistogram.percentile(50)),
      p99Ms: ms(lagHistogram.percentile(99)),
      maxMs: ms(lagHistogram.max),
    },
    cpuSeconds,
  };
}

async function closeAll(): Promise<number> {
  stopping = true;
  let open = 0;
  for (const ws of sockets) {
    if (ws && ws.readyState !== WebSocket.CLOSED) {
      open++;
      ws.close(1000);
    }
  }
  const deadline = performance.now() + 5000;
  while (
    performance.now() < deadline &&
    sockets.some((ws) => ws && ws.readyState !== WebSocket.CLOSED)
  ) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  for (const ws of sockets) ws?.terminate();
  return open;
}
