import { randomBytes } from 'node:crypto';
import { mintToken } from '@bubble/gateway';
import { CLOSE, mulberry32, TERMINAL_CLOSE_CODES } from '@bubble/protocol';
import { InvalidArgumentError } from 'commander';
import { WebSocket } from 'ws';
import { loadConfig } from './config.js';
import {
  RemoteError,
  call,
  endpoint,
  errorMessage,
  keySource,
  platformKey,
  printable,
  resolveBaseUrl,
  showUrl,
  unauthorized,
  type CallResult,
} from './remote.js';
import { tokenSecret } from './secrets.js';
import { followGraph, shuffled, ZipfSampler } from './sim-graph.js';
import { fetchCluster } from './status-command.js';

/**
 * `bubble simulate`: a synthetic platform driving a running gateway. Sets up users and a
 * power-law follow graph (fixed seed), then for --duration posts at --rate, holds --clients
 * WebSockets (JWTs minted with the JWT secret), reads some badges and polls others, and shows
 * progress on stderr. Ctrl-C (or SIGTERM) stops it cleanly: sockets closed, summary printed.
 */

export interface SimulateOptions {
  url?: string;
  users: number;
  rate: number;
  clients: number;
  /** Seconds. */
  duration: number;
  seed: number;
  prefix: string;
  json?: boolean;
}

export const LIMITS = {
  users: [2, 100_000],
  clients: [0, 10_000],
  rate: [0, 10_000],
  duration: [1, 86_400],
  seed: [0, 0xffffffff],
} as const;

const TICK_MS = 100;
const PROGRESS_MS = 1000;
const SETUP_CONCURRENCY = 16;
const MAX_POSTS_IN_FLIGHT = 4;
const MAX_READS_IN_FLIGHT = 16;
const READS_PER_SECOND_MAX = 50;
const POLLS_PER_SECOND = 5;
/** The gateway admits a burst of 50 new connections per address, then 20/s: stay under it. */
const CONNECT_BURST = 40;
const CONNECTS_PER_SECOND = 15;
const REQUEST_TIMEOUT_MS = 10_000;
const STOP_GRACE_MS = 3000;
const MAX_ERROR_SAMPLES = 8;

/** For commander: an integer within [min, max]. */
export function intOption(min: number, max: number) {
  return (text: string): number => {
    const value = Number(text);
    if (!/^\d+$/.test(text.trim()) || !Number.isSafeInteger(value) || value < min || value > max) {
      throw new InvalidArgumentError(`an integer from ${min} to ${max}`);
    }
    return value;
  };
}

/** For commander: a number within [min, max] (decimals allowed). */
export function numberOption(min: number, max: number) {
  return (text: string): number => {
    const value = Number(text);
    if (!/^\d+(\.\d+)?$/.test(text.trim()) || value < min || value > max) {
      throw new InvalidArgumentError(`a number from ${min} to ${max}`);
    }
    return value;
  };
}

/** For commander: 90, 90s, 15m, 2h → seconds, within [min, max]. */
export function durationOption(min: number, max: number) {
  return (text: string): number => {
    const match = /^(\d{1,9})(s|m|h)?$/.exec(text.trim());
    if (!match) throw new InvalidArgumentError('use seconds, or e.g. 30s, 15m, 1h');
    const seconds = Number(match[1]) * { s: 1, m: 60, h: 3600 }[(match[2] ?? 's') as 's'];
    if (seconds < min || seconds > max) {
      throw new InvalidArgumentError(`between ${min} s and ${max / 3600} h`);
    }
    return seconds;
  };
}

export function prefixOption(text: string): string {
  if (!/^[A-Za-z0-9_.:@-]{1,24}$/.test(text)) {
    throw new InvalidArgumentError('1 to 24 characters of [A-Za-z0-9_.:@-]');
  }
  return text;
}

/** What ended the run: its duration, Ctrl-C / SIGTERM, or the gateway refusing the key. */
export type StopCause = 'duration' | 'signal' | 'unauthorized';

interface Stats {
  follows: number;
  postsSent: number;
  accepted: number;
  ignored: number;
  pushes: number;
  initialBadges: number;
  reads: number;
  polls: number;
  connected: number;
  peakConnected: number;
  reconnects: number;
  throttled: number;
  errors: number;
  errorSamples: Map<string, number>;
}

export interface SimulationSummary {
  url: string;
  seed: number;
  users: number;
  follows: number;
  clients: { target: number; connectedAtEnd: number; peak: number; reconnects: number };
  durationS: number;
  stoppedBy: StopCause;
  posts: { sent: number; accepted: number; ignored: number; perSecond: number };
  pushes: { received: number; perSecond: number };
  initialBadges: number;
  reads: number;
  polls: number;
  throttled: number;
  errors: { total: number; samples: Record<string, number> };
}

export async function runSimulate(options: SimulateOptions): Promise<SimulationSummary> {
  if (options.clients > options.users) {
    throw new RemoteError(
      `--clients (${options.clients}) cannot exceed --users (${options.users})`,
    );
  }
  const config = loadConfig();
  const base = resolveBaseUrl(options.url, config);
  const apiKey = platformKey(config);
  const jwtSecret = tokenSecret(config);
  const audience = config.BUBBLE_JWT_AUDIENCE;
  const simulation = new Simulation(options, base, apiKey, keySource(config), (user, ttl) =>
    mintToken({
      secret: jwtSecret,
      user,
      ttlSeconds: ttl,
      audience,
      issuer: config.BUBBLE_JWT_ISSUER,
    }),
  );
  return simulation.run();
}

class Simulation {
  private readonly stats: Stats = {
    follows: 0,
    postsSent: 0,
    accepted: 0,
    ignored: 0,
    pushes: 0,
    initialBadges: 0,
    reads: 0,
    polls: 0,
    connected: 0,
    peakConnected: 0,
    reconnects: 0,
    throttled: 0,
    errors: 0,
    errorSamples: new Map(),
  };
  private readonly stop = new AbortController();
  private stoppedBy: StopCause = 'duration';
  /** Sockets open when the run ended, before they were closed. */
  private connectedAtEnd = 0;
  private readonly random: () => number;
  private readonly ids: string[];
  private readonly runId = `${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
  private postSeq = 0;
  private readonly clients: SimClient[] = [];
  private readonly tokens = new Map<string, string>();
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly tty = process.stderr.isTTY === true;

  constructor(
    private readonly options: SimulateOptions,
    private readonly base: URL,
    private readonly apiKey: string,
    private readonly keyFrom: string,
    private readonly mint: (user: string, ttlSeconds: number) => Promise<string>,
  ) {
    this.random = mulberry32(options.seed ^ 0x5eed);
    const width = String(options.users - 1).length;
    this.ids = Array.from(
      { length: options.users },
      (_, i) => `${options.prefix}${String(i).padStart(width, '0')}`,
    );
  }

  async run(): Promise<SimulationSummary> {
    let signals = 0;
    const onSignal = () => {
      signals++;
      if (signals > 1) {
        process.stderr.write('\nsecond signal: exiting at once\n');
        process.exit(130);
      }
      this.stoppedBy = 'signal';
      this.stop.abort();
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    let drivenMs = 0;
    try {
      await this.preflight();
      await this.setUp();
      if (!this.stop.signal.aborted) {
        drivenMs = await this.drive();
      }
    } finally {
      await this.shutDown();
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    }
    return this.summary(drivenMs);
  }

  /** Reachable, and the key accepted: otherwise stop now with a clear message. */
  private async preflight(): Promise<void> {
    const cluster = await fetchCluster(this.base, this.apiKey, this.keyFrom, REQUEST_TIMEOUT_MS);
    const o = this.options;
    this.log(
      `simulating against ${showUrl(this.base)} (leader ${cluster.leader === null ? 'none' : printable(cluster.leader)}, ` +
        `${cluster.pools.length} pools): ${o.users} users, ${o.clients} clients, ${o.rate} posts/s for ${o.duration}s, seed ${o.seed}`,
    );
  }

  /** Replaces every simulated user's follow set (idempotent for one seed). */
  private async setUp(): Promise<void> {
    const graph = followGraph({ users: this.options.users, seed: this.options.seed });
    let next = 0;
    let done = 0;
    let lastShown = Date.now();
    const worker = async () => {
      while (next < graph.length && !this.stop.signal.aborted) {
        const user = next++;
        const authors = graph[user]!.map((a) => this.ids[a]!);
        const result = await this.platform('PUT', `v1/users/${this.ids[user]}/follows`, {
          authors,
        });
        if (result?.status === 204) this.stats.follows += authors.length;
        else if (result) this.fail(`PUT follows: ${errorMessage(result)}`);
        done++;
        if (Date.now() - lastShown >= PROGRESS_MS) {
          lastShown = Date.now();
          this.log(`setup: follow sets ${done}/${graph.length}`);
        }
      }
    };
    await Promise.all(Array.from({ length: SETUP_CONCURRENCY }, worker));
    if (!this.stop.signal.aborted) {
      this.log(`setup: ${graph.length} users follow ${this.stats.follows} authors in all`);
    }
  }

  /** Posts, sockets, reads and polls until the deadline or a stop; returns the time driven. */
  private async drive(): Promise<number> {
    const o = this.options;
    const ttl = o.duration + 600;
    const order = shuffled(o.users, mulberry32(o.seed));
    const wsUrl = endpoint(this.base, 'v1/ws');
    wsUrl.protocol = wsUrl.protocol === 'https:' ? 'wss:' : 'ws:';
    for (const index of order.slice(0, o.clients)) {
      const user = this.ids[index]!;
      this.clients.push(new SimClient(user, await this.token(user, ttl), wsUrl, this.stats, this));
    }
    const authors = new ZipfSampler(o.users);
    const startedAt = Date.now();
    const deadline = startedAt + o.duration * 1000;
    const pending = [...this.clients];
    let connectTokens = CONNECT_BURST;
    let budget = 0;
    let last = Date.now();
    let lastProgress = last;
    let lastSecond = last;
    let sample = { at: last, posts: 0, pushes: 0 };
    while (!this.stop.signal.aborted && Date.now() < deadline) {
      const now = Date.now();
      const dt = (now - last) / 1000;
      last = now;

      // Open (and reopen) sockets, paced under the gateway's per-address limit.
      connectTokens = Math.min(CONNECT_BURST, connectTokens + dt * CONNECTS_PER_SECOND);
      for (const client of this.clients) if (client.wantsConnect(now)) pending.push(client);
      while (pending.length > 0 && connectTokens >= 1) {
        const client = pending.shift()!;
        if (!client.isIdle()) continue;
        connectTokens--;
        client.connect();
      }

      // Posts, by popular authors mostly, in one batch per tick.
      budget = Math.min(budget + dt * o.rate, Math.max(1, o.rate));
      const count = Math.min(1000, Math.floor(budget));
      if (count > 0 && this.inFlightOf('posts') < MAX_POSTS_IN_FLIGHT) {
        budget -= count;
        const posts = Array.from({ length: count }, () => ({
          author: this.ids[authors.sample(this.random)]!,
          id: `${this.runId}-${++this.postSeq}`,
          ts: now,
        }));
        this.track('posts', this.post(posts));
      }

      if (now - lastSecond >= 1000) {
        lastSecond = now;
        this.readSome(ttl);
        this.pollSome(ttl);
      }
      if (now - lastProgress >= PROGRESS_MS) {
        const seconds = (now - sample.at) / 1000;
        this.progress(
          Math.round((o.duration * 1000 - (deadline - now)) / 1000),
          (this.stats.postsSent - sample.posts) / seconds,
          (this.stats.pushes - sample.pushes) / seconds,
        );
        sample = { at: now, posts: this.stats.postsSent, pushes: this.stats.pushes };
        lastProgress = now;
      }
      await sleep(Math.min(TICK_MS, Math.max(0, deadline - Date.now())), this.stop.signal);
    }
    if (this.tty) process.stderr.write('\n');
    return Date.now() - startedAt;
  }

  /** Clients whose badge shows unread posts read them, each with a one-in-four chance a second. */
  private readSome(ttl: number): void {
    let started = 0;
    for (const client of this.clients) {
      if (started >= READS_PER_SECOND_MAX || this.inFlightOf('reads') >= MAX_READS_IN_FLIGHT) break;
      if (!client.isOpen() || client.feed === 0 || this.random() >= 0.25) continue;
      started++;
      this.track(
        'reads',
        this.asUser('POST', 'v1/badge/read', client.user, ttl, { scope: 'feed' }).then((ok) => {
          if (ok) this.stats.reads++;
        }),
      );
    }
  }

  /** A few users poll their badge as an app without a socket would. */
  private pollSome(ttl: number): void {
    for (let i = 0; i < POLLS_PER_SECOND && this.inFlightOf('reads') < MAX_READS_IN_FLIGHT; i++) {
      const user = this.ids[Math.floor(this.random() * this.ids.length)]!;
      this.track(
        'reads',
        this.asUser('GET', 'v1/badge', user, ttl).then((ok) => {
          if (ok) this.stats.polls++;
        }),
      );
    }
  }

  private async post(posts: Array<{ author: string; id: string; ts: number }>): Promise<void> {
    this.stats.postsSent += posts.length;
    const result = await this.platform('POST', 'v1/posts', { posts });
    if (!result) return;
    if (result.status !== 202) {
      this.fail(`POST /v1/posts: ${errorMessage(result)}`);
      return;
    }
    try {
      const body = JSON.parse(result.text) as { accepted?: unknown; ignored?: unknown };
      if (typeof body.accepted === 'number') this.stats.accepted += body.accepted;
      if (typeof body.ignored === 'number') this.stats.ignored += body.ignored;
    } catch {
      this.fail('POST /v1/posts: an answer that is not JSON');
    }
  }

  /** A platform call; null when it could not be made (counted as an error, or stopping). */
  private async platform(method: string, path: string, body?: unknown): Promise<CallResult | null> {
    try {
      const result = await call(endpoint(this.base, path), {
        method,
        body,
        headers: { 'x-api-key': this.apiKey },
        timeoutMs: REQUEST_TIMEOUT_MS,
        maxBytes: 64 * 1024,
        signal: this.stop.signal,
      });
      if (result.status === 401 || result.status === 403) {
        // The key was good at the start: a changed key ends the run.
        this.fail(unauthorized(this.base, result, this.keyFrom).message);
        this.stoppedBy = 'unauthorized';
        this.stop.abort();
        return null;
      }
      return result;
    } catch (err) {
      if (!this.stop.signal.aborted) this.fail((err as Error).message);
      return null;
    }
  }

  /** A call with the user's JWT (Authorization header only); true on a 2xx. */
  private async asUser(
    method: string,
    path: string,
    user: string,
    ttl: number,
    body?: unknown,
  ): Promise<boolean> {
    try {
      const result = await call(endpoint(this.base, path), {
        method,
        body,
        headers: { authorization: `Bearer ${await this.token(user, ttl)}` },
        timeoutMs: REQUEST_TIMEOUT_MS,
        maxBytes: 64 * 1024,
        signal: this.stop.signal,
      });
      if (result.status === 429 || result.status === 503) {
        this.stats.throttled++;
        return false;
      }
      if (result.status >= 300) {
        this.fail(`${method} /${path}: ${errorMessage(result)}`);
        return false;
      }
      return true;
    } catch (err) {
      if (!this.stop.signal.aborted) this.fail((err as Error).message);
      return false;
    }
  }

  private async token(user: string, ttl: number): Promise<string> {
    let token = this.tokens.get(user);
    if (!token) {
      token = await this.mint(user, ttl);
      if (this.tokens.size >= 20_000) this.tokens.clear();
      this.tokens.set(user, token);
    }
    return token;
  }

  private readonly kinds = new Map<Promise<unknown>, string>();

  private track(kind: string, work: Promise<unknown>): void {
    const tracked = work.finally(() => {
      this.inFlight.delete(tracked);
      this.kinds.delete(tracked);
    });
    this.inFlight.add(tracked);
    this.kinds.set(tracked, kind);
  }

  private inFlightOf(kind: string): number {
    let n = 0;
    for (const k of this.kinds.values()) if (k === kind) n++;
    return n;
  }

  /** Counts an error and keeps a bounded sample of distinct messages. */
  fail(message: string): void {
    this.stats.errors++;
    const text = printable(message, 160);
    const samples = this.stats.errorSamples;
    if (samples.has(text) || samples.size < MAX_ERROR_SAMPLES) {
      samples.set(text, (samples.get(text) ?? 0) + 1);
    }
  }

  get stopping(): boolean {
    return this.stop.signal.aborted;
  }

  private async shutDown(): Promise<void> {
    // Requests in flight get a short grace, then are cut off; sockets close with 1000.
    const grace = sleep(STOP_GRACE_MS);
    await Promise.race([Promise.allSettled([...this.inFlight]), grace]);
    this.stop.abort();
    this.connectedAtEnd = this.stats.connected;
    await Promise.allSettled(this.clients.map((c) => c.close()));
  }

  private progress(elapsed: number, postsPerSecond: number, pushesPerSecond: number): void {
    const s = this.stats;
    const line =
      `[${String(elapsed).padStart(String(this.options.duration).length)}s/${this.options.duration}s] ` +
      `posts ${postsPerSecond.toFixed(0)}/s (${s.postsSent}) · ` +
      `pushes ${pushesPerSecond.toFixed(0)}/s (${s.pushes}) · ` +
      `clients ${s.connected}/${this.options.clients} · reads ${s.reads} · polls ${s.polls} · ` +
      `errors ${s.errors}`;
    if (this.tty) process.stderr.write(`\r\x1b[K${line}`);
    else process.stderr.write(`${line}\n`);
  }

  private log(line: string): void {
    process.stderr.write(`${line}\n`);
  }

  private summary(drivenMs: number): SimulationSummary {
    const s = this.stats;
    const seconds = Math.max(drivenMs / 1000, 0.001);
    return {
      url: showUrl(this.base),
      seed: this.options.seed,
      users: this.options.users,
      follows: s.follows,
      clients: {
        target: this.options.clients,
        connectedAtEnd: this.connectedAtEnd,
        peak: s.peakConnected,
        reconnects: s.reconnects,
      },
      durationS: Math.round(seconds * 10) / 10,
      stoppedBy: this.stoppedBy,
      posts: {
        sent: s.postsSent,
        accepted: s.accepted,
        ignored: s.ignored,
        perSecond: Math.round((s.postsSent / seconds) * 10) / 10,
      },
      pushes: { received: s.pushes, perSecond: Math.round((s.pushes / seconds) * 10) / 10 },
      initialBadges: s.initialBadges,
      reads: s.reads,
      polls: s.polls,
      throttled: s.throttled,
      errors: { total: s.errors, samples: Object.fromEntries(s.errorSamples) },
    };
  }
}

/** One simulated app: a socket for its user, reconnecting with backoff like the SDK would. */
class SimClient {
  private ws: WebSocket | undefined;
  private state: 'idle' | 'connecting' | 'open' | 'done' = 'idle';
  private retryAt = 0;
  private failures = 0;
  private queued = true;
  private refusedStatus: number | undefined;
  /** The feed count of the newest badge received. */
  feed = 0;

  constructor(
    readonly user: string,
    private readonly token: string,
    private readonly url: URL,
    private readonly stats: Stats,
    private readonly sim: { fail(message: string): void; readonly stopping: boolean },
  ) {}

  isIdle(): boolean {
    return this.state === 'idle';
  }

  isOpen(): boolean {
    return this.state === 'open';
  }

  /** True once when an idle client's backoff has passed: it goes back in the connect queue. */
  wantsConnect(now: number): boolean {
    if (this.state !== 'idle' || this.queued || now < this.retryAt) return false;
    this.queued = true;
    return true;
  }

  connect(): void {
    this.queued = false;
    this.state = 'connecting';
    this.refusedStatus = undefined;
    let first = true;
    let opened = false;
    const ws = new WebSocket(this.url, {
      headers: { authorization: `Bearer ${this.token}` },
      handshakeTimeout: REQUEST_TIMEOUT_MS,
      maxPayload: 1024 * 1024,
      perMessageDeflate: false,
      followRedirects: false,
    });
    this.ws = ws;
    ws.on('unexpected-response', (_req, res) => {
      this.refusedStatus = res.statusCode;
      res.resume();
      ws.terminate();
    });
    ws.on('open', () => {
      opened = true;
      this.state = 'open';
      this.failures = 0;
      this.stats.connected++;
      this.stats.peakConnected = Math.max(this.stats.peakConnected, this.stats.connected);
    });
    ws.on('message', (data, isBinary) => {
      if (isBinary) return this.sim.fail('a binary frame from the gateway');
      let frame: { type?: unknown; badge?: { feed?: unknown }; code?: unknown; message?: unknown };
      try {
        frame = JSON.parse(data.toString()) as typeof frame;
      } catch {
        return this.sim.fail('a frame that is not JSON');
      }
      if (frame.type === 'badge') {
        if (first) this.stats.initialBadges++;
        else this.stats.pushes++;
        first = false;
        const feed = frame.badge?.feed;
        this.feed = typeof feed === 'number' ? feed : 0;
      } else if (frame.type === 'error') {
        this.sim.fail(`WebSocket error frame: ${String(frame.code)}: ${String(frame.message)}`);
      }
    });
    ws.on('error', (err) => {
      if (this.sim.stopping || this.refusedStatus !== undefined) return;
      this.sim.fail(`WebSocket: ${err.message}`);
    });
    ws.on('close', (code) => {
      if (opened) this.stats.connected--;
      this.ws = undefined;
      if (this.sim.stopping || this.state === 'done') {
        this.state = 'done';
        return;
      }
      const refused = this.refusedStatus;
      if (refused === 429 || refused === 503) {
        this.stats.throttled++;
      } else if (refused !== undefined) {
        this.sim.fail(`WebSocket upgrade refused with HTTP ${refused}`);
        if (refused === 401 || refused === 403 || refused === 404) {
          this.state = 'done';
          return;
        }
      } else if (opened && TERMINAL_CLOSE_CODES.has(code)) {
        this.sim.fail(`WebSocket closed with ${code}`);
        this.state = 'done';
        return;
      } else if (opened && code !== CLOSE.goingAway && code !== CLOSE.overloaded) {
        this.sim.fail(`WebSocket lost (${code})`);
      }
      if (opened) this.stats.reconnects++;
      this.failures++;
      this.state = 'idle';
      this.retryAt = Date.now() + Math.min(10_000, 250 * 2 ** Math.min(this.failures, 6));
    });
  }

  /** Closes with 1000 and waits (bounded) for the close to complete. */
  async close(): Promise<void> {
    this.state = 'done';
    const ws = this.ws;
    if (!ws) return;
    const closed = new Promise<void>((resolve) => ws.once('close', () => resolve()));
    if (ws.readyState === WebSocket.CONNECTING) ws.terminate();
    else ws.close(1000, 'simulation over');
    const timer = setTimeout(() => ws.terminate(), 2000);
    await closed;
    clearTimeout(timer);
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

const STOP_CAUSES: Record<StopCause, string> = {
  duration: 'its duration',
  signal: 'a signal',
  unauthorized: 'the gateway refusing the API key',
};

/** The summary as people read it. */
export function formatSummary(s: SimulationSummary): string {
  const lines = [
    `simulation against ${s.url} (seed ${s.seed}), ${s.durationS} s, stopped by ${STOP_CAUSES[s.stoppedBy]}`,
    `  users          ${s.users} (${s.follows} follows)`,
    `  clients        ${s.clients.connectedAtEnd}/${s.clients.target} connected at the end, peak ${s.clients.peak}, ${s.clients.reconnects} reconnects`,
    `  posts          ${s.posts.sent} sent (${s.posts.perSecond}/s), ${s.posts.accepted} accepted, ${s.posts.ignored} ignored`,
    `  pushes         ${s.pushes.received} received (${s.pushes.perSecond}/s), plus ${s.initialBadges} initial badges`,
    `  reads · polls  ${s.reads} · ${s.polls}`,
    `  throttled      ${s.throttled}`,
    `  errors         ${s.errors.total}`,
  ];
  for (const [message, n] of Object.entries(s.errors.samples)) lines.push(`    ${n}× ${message}`);
  return `${lines.join('\n')}\n`;
}
