import type { Agent } from 'node:http';
import {
  backoffMs,
  isValidId,
  ownValue,
  type SourcesFetcher,
  type SourcesFetchOptions,
  type SourcesOutcome,
} from '@bubble/protocol';
import { Registry } from 'prom-client';
import { webhookTarget, type WebhookTarget } from '../webhook/webhook-request.js';
import { CircuitBreaker, type BreakerChange } from './circuit-breaker.js';
import { Fifo } from './fifo.js';
import { LogThrottle } from './log-throttle.js';
import { checkSourcesEntry } from './sources-answer.js';
import {
  resolveSourcesOptions,
  type ResolvedSourcesOptions,
  type SourcesClientOptions,
  type SourcesLog,
} from './sources-client-options.js';
import {
  SourcesMetrics,
  type SourcesClientStats,
  type SourcesUserLabel,
} from './sources-metrics.js';
import { postSources, sourcesAgent, type SourcesRequestResult } from './sources-request.js';

/** One fetch() call: its users' outcomes, settled one user at a time. */
interface Waiter {
  deadline: number | undefined;
  settle(user: string, outcome: SourcesOutcome): void;
}

/** One user's pending fetch, shared by every fetch() that asks for the user meanwhile. */
interface Entry {
  user: string;
  waiters: Waiter[];
  attempts: number;
  state: 'queued' | 'sending' | 'retrying';
  /** A waiter has a deadline: queued ahead of the background's needs. */
  urgent: boolean;
}

const UNREACHABLE: SourcesOutcome = { ok: false, reason: 'unreachable' };
const INVALID: SourcesOutcome = { ok: false, reason: 'invalid' };
const PAUSED: SourcesOutcome = { ok: false, reason: 'paused' };

/**
 * The HTTP client of the platform's sources endpoint (docs/api.md, "Sources endpoint"). A user
 * asked for while their fetch is pending shares it; distinct users are batched; requests in
 * flight are bounded; a failed request is retried with backoff while a waiter's deadline (or,
 * without one, maxAttempts) allows; a circuit breaker pauses the endpoint after repeated
 * failures. Needs with a deadline (a badge someone waits for) go ahead of those without.
 */
export class SourcesClient implements SourcesFetcher {
  readonly metrics: SourcesMetrics;
  private readonly o: ResolvedSourcesOptions;
  private readonly target: WebhookTarget;
  private readonly agent: Agent;
  private readonly log: SourcesLog | undefined;
  private readonly throttle: LogThrottle;
  private readonly clock: () => number;
  private readonly random: () => number;
  private readonly breaker: CircuitBreaker;
  private readonly pending = new Map<string, Entry>();
  /** Entries to send, urgent first; an entry may sit in both (skipped unless still queued). */
  private readonly urgentQueue = new Fifo<Entry>();
  private readonly backgroundQueue = new Fifo<Entry>();
  private queued = 0;
  private retrying = 0;
  private sending = 0;
  private readonly retryTimers = new Map<NodeJS.Timeout, Entry[]>();
  private readonly controllers = new Set<AbortController>();
  private readonly requests = new Set<Promise<void>>();
  private flushTimer: NodeJS.Timeout | NodeJS.Immediate | undefined;
  private lastFailure = '';
  private closed = false;

  constructor(options: SourcesClientOptions) {
    this.o = resolveSourcesOptions(options);
    this.target = webhookTarget(options.url);
    this.agent = sourcesAgent(this.target);
    this.log = options.log;
    this.clock = options.clock ?? Date.now;
    this.random = options.random ?? Math.random;
    this.throttle = new LogThrottle(this.o.logEveryMs, this.clock);
    this.breaker = new CircuitBreaker(this.o.breaker, this.clock);
    this.metrics = new SourcesMetrics(options.registry ?? new Registry(), () => ({
      usersWaiting: this.queued + this.retrying,
      breakerOpen: this.breaker.open ? 1 : 0,
    }));
  }

  fetch(
    users: readonly string[],
    options: SourcesFetchOptions = {},
  ): Promise<Map<string, SourcesOutcome>> {
    // Every distinct user gets a place in input order, filled as outcomes come.
    const result = new Map<string, SourcesOutcome>();
    for (const user of users) result.set(user, UNREACHABLE);
    if (result.size === 0) return Promise.resolve(result);
    return new Promise((resolve) => {
      let left = result.size;
      const waiter: Waiter = {
        deadline: options.deadline,
        settle(user, outcome) {
          result.set(user, outcome);
          if (--left === 0) resolve(result);
        },
      };
      let paused = 0;
      for (const user of result.keys()) {
        if (this.closed) waiter.settle(user, UNREACHABLE);
        else if (!isValidId(user)) waiter.settle(user, INVALID);
        else if (this.pending.has(user)) this.join(this.pending.get(user)!, waiter);
        else if (this.breaker.paused()) {
          paused++;
          waiter.settle(user, PAUSED);
        } else this.enqueue(user, waiter);
      }
      this.metrics.usersEnded('paused', paused);
      this.scheduleFlush();
    });
  }

  stats(): SourcesClientStats {
    return {
      requests: { ...this.metrics.requestCounts },
      users: { ...this.metrics.userCounts },
      usersWaiting: this.queued + this.retrying,
      usersInFlight: this.sending,
      requestsInFlight: this.requests.size,
      breakerOpen: this.breaker.open ? 1 : 0,
    };
  }

  /** Aborts the requests in flight; every pending fetch resolves (its users unreachable). */
  async close(): Promise<void> {
    if (!this.closed) {
      this.closed = true;
      this.clearFlushTimer();
      for (const timer of this.retryTimers.keys()) clearTimeout(timer);
      this.retryTimers.clear();
      const entries = [...this.pending.values()];
      this.pending.clear();
      this.urgentQueue.clear();
      this.backgroundQueue.clear();
      this.queued = this.retrying = this.sending = 0;
      for (const entry of entries) for (const w of entry.waiters) w.settle(entry.user, UNREACHABLE);
      for (const controller of this.controllers) controller.abort();
    }
    await Promise.allSettled([...this.requests]);
    this.agent.destroy();
  }

  // ---- needs → queue ----

  private enqueue(user: string, waiter: Waiter): void {
    const entry: Entry = {
      user,
      waiters: [waiter],
      attempts: 0,
      state: 'queued',
      urgent: waiter.deadline !== undefined,
    };
    this.pending.set(user, entry);
    this.queued++;
    (entry.urgent ? this.urgentQueue : this.backgroundQueue).push(entry);
  }

  private join(entry: Entry, waiter: Waiter): void {
    entry.waiters.push(waiter);
    if (waiter.deadline === undefined || entry.urgent) return;
    entry.urgent = true;
    if (entry.state === 'queued') this.urgentQueue.push(entry);
  }

  private scheduleFlush(): void {
    if (this.queued === 0 || this.flushTimer !== undefined || this.closed) return;
    if (this.queued >= this.o.batchSize) this.pump();
    else if (this.o.batchWindowMs <= 0 || this.sendsAtOnce())
      this.flushTimer = setImmediate(() => this.flush());
    else this.flushTimer = setTimeout(() => this.flush(), this.o.batchWindowMs);
  }

  /**
   * An idle client sends a need with a deadline (a cold start) at the end of this turn, with
   * whatever else arrived in it, instead of waiting the window for company: a timer of 1 ms
   * cost a cold start 1.5 ms at the median and up to 6 at p99 (`bench rehydrate`). Once
   * requests are in flight, the window and the concurrency bound gather needs as before.
   */
  private sendsAtOnce(): boolean {
    return this.requests.size === 0 && this.urgentQueue.size > 0;
  }

  private flush(): void {
    this.flushTimer = undefined;
    this.pump();
  }

  private clearFlushTimer(): void {
    if (this.flushTimer === undefined) return;
    clearTimeout(this.flushTimer as NodeJS.Timeout);
    clearImmediate(this.flushTimer as NodeJS.Immediate);
    this.flushTimer = undefined;
  }

  /** Starts requests while a slot is free, the breaker admits one and users are queued. */
  private pump(): void {
    while (!this.closed && this.queued > 0 && this.requests.size < this.o.concurrency) {
      const admission = this.breaker.admission();
      if (admission === 'paused') return this.failQueued();
      // The probe's verdict pumps again.
      if (admission === 'probing') return;
      const batch = this.takeBatch();
      if (batch.length === 0) continue;
      if (admission === 'probe') this.breaker.startProbe();
      this.send(batch, admission === 'probe');
      if (admission === 'probe') return;
    }
  }

  /** Up to batchSize queued entries, urgent first; a waiter whose deadline passed is let go. */
  private takeBatch(): Entry[] {
    const now = this.clock();
    const batch: Entry[] = [];
    while (batch.length < this.o.batchSize) {
      const entry = this.urgentQueue.shift() ?? this.backgroundQueue.shift();
      if (entry === undefined) break;
      if (entry.state !== 'queued' || this.pending.get(entry.user) !== entry) continue;
      this.queued--;
      entry.state = 'sending';
      this.dropWaiters(entry, (w) => w.deadline !== undefined && w.deadline < now);
      if (entry.waiters.length === 0) this.end(entry, 'failed');
      else batch.push(entry);
    }
    this.sending += batch.length;
    return batch;
  }

  /** The breaker paused the endpoint: what was never sent is paused, what was tried failed. */
  private failQueued(): void {
    let entry: Entry | undefined;
    while ((entry = this.urgentQueue.shift() ?? this.backgroundQueue.shift())) {
      if (entry.state !== 'queued' || this.pending.get(entry.user) !== entry) continue;
      this.queued--;
      if (entry.attempts === 0) this.settle(entry, PAUSED, 'paused');
      else this.settle(entry, UNREACHABLE);
    }
  }

  // ---- requests ----

  private send(batch: Entry[], probe: boolean): void {
    const controller = new AbortController();
    this.controllers.add(controller);
    const startedAt = performance.now();
    for (const entry of batch) entry.attempts++;
    const request = postSources({
      target: this.target,
      agent: this.agent,
      secret: this.o.secret,
      users: batch.map((entry) => entry.user),
      timeoutMs: this.o.timeoutMs,
      maxBodyBytes: this.o.maxBodyBytes,
      nowMs: this.clock(),
      controller,
    })
      .then((result) => {
        this.controllers.delete(controller);
        this.requests.delete(request);
        if (this.closed) {
          if (probe) this.breaker.probeAbandoned();
          return;
        }
        this.sending -= batch.length;
        this.metrics.request(result.kind, (performance.now() - startedAt) / 1000);
        if (result.kind === 'ok') {
          this.breakerChanged(this.breaker.succeeded(probe));
          this.answer(batch, result.users);
        } else {
          this.lastFailure = result.kind === 'timeout' ? 'timeout' : result.error;
          this.requestFailed(result, batch.length);
          this.breakerChanged(this.breaker.failed(probe));
          this.retryOrFail(batch);
        }
        this.pump();
      })
      .catch((err: unknown) => {
        // A defect, not the endpoint: logged rather than left to crash the process.
        this.log?.error(
          { err, endpoint: this.target.origin },
          'sources: handling an answer failed',
        );
        for (const entry of batch) if (entry.waiters.length > 0) this.settle(entry, UNREACHABLE);
      });
    this.requests.add(request);
  }

  private answer(batch: Entry[], users: Readonly<Record<string, unknown>>): void {
    for (const entry of batch) {
      const check = checkSourcesEntry(ownValue(users, entry.user), this.o.caps);
      if (check.ok) {
        this.settle(entry, { ok: true, answer: check.answer }, 'ok');
        continue;
      }
      this.settle(entry, INVALID, 'invalid');
      const logged = this.throttle.take('refused');
      if (logged)
        this.log?.warn(
          { endpoint: this.target.origin, user: entry.user, why: check.why, ...logged },
          "sources: a user's entry in the answer was refused (their badge is served stale)",
        );
    }
  }

  /** Each waiter keeps the entry for a retry while its deadline (or maxAttempts) allows. */
  private retryOrFail(batch: Entry[]): void {
    if (this.breaker.open) {
      for (const entry of batch) this.settle(entry, UNREACHABLE);
      return;
    }
    const attempt = Math.max(...batch.map((entry) => entry.attempts));
    const delayMs = backoffMs(attempt, this.o.retryBaseMs, this.o.retryMaxMs, this.random);
    const retryAt = this.clock() + delayMs;
    const again: Entry[] = [];
    for (const entry of batch) {
      const outOfAttempts = entry.attempts >= this.o.maxAttempts;
      this.dropWaiters(entry, (w) =>
        w.deadline === undefined ? outOfAttempts : retryAt > w.deadline,
      );
      if (entry.waiters.length === 0) {
        this.end(entry, 'failed');
        continue;
      }
      entry.state = 'retrying';
      again.push(entry);
    }
    if (again.length === 0) return;
    this.retrying += again.length;
    const timer = setTimeout(() => {
      this.retryTimers.delete(timer);
      this.retrying -= again.length;
      for (const entry of again) {
        entry.state = 'queued';
        this.queued++;
        (entry.urgent ? this.urgentQueue : this.backgroundQueue).push(entry);
      }
      this.pump();
    }, delayMs);
    this.retryTimers.set(timer, again);
  }

  /** The breaker opened: fetches between retries stop waiting for a request it will not send. */
  private failRetrying(): void {
    for (const [timer, entries] of this.retryTimers) {
      clearTimeout(timer);
      this.retrying -= entries.length;
      for (const entry of entries) this.settle(entry, UNREACHABLE);
    }
    this.retryTimers.clear();
  }

  // ---- outcomes ----

  private settle(entry: Entry, outcome: SourcesOutcome, label: SourcesUserLabel = 'failed'): void {
    for (const waiter of entry.waiters) waiter.settle(entry.user, outcome);
    entry.waiters = [];
    this.end(entry, label);
  }

  private dropWaiters(entry: Entry, drop: (waiter: Waiter) => boolean): void {
    if (!entry.waiters.some(drop)) return;
    entry.waiters = entry.waiters.filter((waiter) => {
      if (!drop(waiter)) return true;
      waiter.settle(entry.user, UNREACHABLE);
      return false;
    });
  }

  private end(entry: Entry, label: SourcesUserLabel): void {
    if (this.pending.get(entry.user) === entry) this.pending.delete(entry.user);
    this.metrics.usersEnded(label);
  }

  // ---- what an operator is told ----

  private requestFailed(result: Exclude<SourcesRequestResult, { kind: 'ok' }>, users: number) {
    const logged = this.throttle.take('request');
    if (logged)
      this.log?.warn(
        {
          endpoint: this.target.origin,
          result: result.kind,
          error: result.error,
          users,
          ...logged,
        },
        'sources: a request to the endpoint failed',
      );
  }

  private breakerChanged(change: BreakerChange | null): void {
    if (change === null) return;
    const endpoint = this.target.origin;
    switch (change.kind) {
      case 'opened':
      case 'reopened':
        this.log?.warn(
          { endpoint, pauseMs: change.pauseMs, reason: this.lastFailure },
          change.kind === 'opened'
            ? 'sources: endpoint paused after repeated failures (circuit breaker open)'
            : 'sources: the probe failed, endpoint paused again (circuit breaker open)',
        );
        this.failRetrying();
        this.failQueued();
        break;
      case 'closed':
        this.log?.info(
          { endpoint, openForMs: change.openForMs },
          'sources: the probe succeeded, endpoint answers again (circuit breaker closed)',
        );
        break;
    }
  }
}
