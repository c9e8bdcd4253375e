import { randomBytes } from 'node:crypto';
import { mintToken } from '@bubble/gateway';
import { mulberry32 } from '@bubble/protocol';
import { loadConfig } from './config.js';
import {
  RemoteError,
  endpoint,
  errorMessage,
  printable,
  remoteTarget,
  showUrl,
  type RemoteTarget,
} from './remote.js';
import { tokenSecret } from './secrets.js';
import { SimCalls } from './sim-calls.js';
import { SIM_REQUEST_TIMEOUT_MS, SimClient } from './sim-client.js';
import { followGraph, shuffled, ZipfSampler } from './sim-graph.js';
import { newSimStats, type SimulationSummary, type StopCause } from './sim-report.js';
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
const STOP_GRACE_MS = 3000;
const MAX_ERROR_SAMPLES = 8;

export async function runSimulate(options: SimulateOptions): Promise<SimulationSummary> {
  if (options.clients > options.users) {
    throw new RemoteError(
      `--clients (${options.clients}) cannot exceed --users (${options.users})`,
    );
  }
  const config = loadConfig();
  const target = remoteTarget(options.url, config);
  const jwtSecret = tokenSecret(config);
  const audience = config.BUBBLE_JWT_AUDIENCE;
  const simulation = new Simulation(options, target, (user, ttl) =>
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
  private readonly stats = newSimStats();
  private readonly stop = new AbortController();
  private stoppedBy: StopCause = 'duration';
  /** Sockets open when the run ended, before they were closed. */
  private connectedAtEnd = 0;
  private readonly random: () => number;
  private readonly ids: string[];
  private readonly runId = `${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
  private postSeq = 0;
  private readonly clients: SimClient[] = [];
  private readonly calls: SimCalls;
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly tty = process.stderr.isTTY === true;

  constructor(
    private readonly options: SimulateOptions,
    private readonly target: RemoteTarget,
    mint: (user: string, ttlSeconds: number) => Promise<string>,
  ) {
    this.calls = new SimCalls(target.base, target.apiKey, target.keySource, mint, {
      signal: this.stop.signal,
      fail: (message) => this.fail(message),
      throttled: () => this.stats.throttled++,
      unauthorized: () => {
        this.stoppedBy = 'unauthorized';
        this.stop.abort();
      },
    });
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
    const cluster = await fetchCluster(this.target, SIM_REQUEST_TIMEOUT_MS);
    const o = this.options;
    this.log(
      `simulating against ${showUrl(this.target.base)} (leader ${cluster.leader === null ? 'none' : printable(cluster.leader)}, ` +
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
        const result = await this.calls.platform('PUT', `v1/users/${this.ids[user]}/follows`, {
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
    const wsUrl = endpoint(this.target.base, 'v1/ws');
    wsUrl.protocol = wsUrl.protocol === 'https:' ? 'wss:' : 'ws:';
    for (const index of order.slice(0, o.clients)) {
      const user = this.ids[index]!;
      this.clients.push(
        new SimClient(user, await this.calls.token(user, ttl), wsUrl, this.stats, this),
      );
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
        this.calls
          .asUser('POST', 'v1/badge/read', client.user, ttl, { scope: 'feed' })
          .then((ok) => {
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
        this.calls.asUser('GET', 'v1/badge', user, ttl).then((ok) => {
          if (ok) this.stats.polls++;
        }),
      );
    }
  }

  private async post(posts: Array<{ author: string; id: string; ts: number }>): Promise<void> {
    this.stats.postsSent += posts.length;
    const result = await this.calls.platform('POST', 'v1/posts', { posts });
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
      url: showUrl(this.target.base),
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
