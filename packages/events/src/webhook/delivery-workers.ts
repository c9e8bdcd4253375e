import { randomUUID } from 'node:crypto';
import type { BadgeService } from '@bubble/badges';
import { backoffMs, DAY_MS } from '@bubble/protocol';
import {
  JOB_DONE,
  RedisWebhookQueue,
  type DueUser,
  type RedisClient,
  type ScheduledPage,
  type RedisKeys,
  type WebhookJobEntry,
  type WebhookQueueStats,
} from '@bubble/store';
import pino, { type Logger } from 'pino';
import { Registry } from 'prom-client';
import { pageOfJob } from './job-pages.js';
import { lowers, parseJob, reasonOfJob } from './offline-jobs.js';
import { deliveryFor, type WebhookDelivery } from './sync-decision.js';
import { WebhookMetrics } from './webhook-metrics.js';
import { postDelivery, webhookTarget, type WebhookTarget } from './webhook-request.js';

export interface DeliveryWorkersOptions {
  /** BUBBLE_WEBHOOK_URL; credentials in it become a Basic Authorization header. */
  url: string;
  /** BUBBLE_WEBHOOK_SECRET, the HMAC key of X-Bubble-Signature. */
  secret: string;
  /** This worker's name in the jobs' consumer group (the gateway's node id). */
  consumer: string;
  timeoutMs?: number;
  maxAttempts?: number;
  minIntervalMs?: number;
  retryBaseMs?: number;
  retryMaxMs?: number;
  queueMax?: number;
  /** Requests this worker has in flight at most (each a batch of up to `batchSize` users). */
  concurrency?: number;
  /** A job idle this long in its consumer (a dead gateway) is claimed by another; 30 s. */
  claimMs?: number;
  /**
   * How long a sender holds the users it prepares, and a batch beyond its request's timeout,
   * before another sender may take them over (a sender that died); 10 s.
   */
  leaseMs?: number;
  /** Members or users read per page of a job; 500. */
  pageSize?: number;
  /** Users per request, 1 to 100. */
  batchSize?: number;
  /** How often an idle sender looks for due users and retries; 50 ms. */
  pollMs?: number;
  /** Longest block of the read of new jobs; 1 s. */
  blockMs?: number;
  registry?: Registry;
  logger?: Logger;
}

export interface DeliveryWorkers {
  readonly metrics: WebhookMetrics;
  stats(): Promise<WebhookQueueStats>;
  /** Stops at the next page or request boundary; what is left is resumed by any worker. */
  close(): Promise<void>;
}

/** Jobs one worker expands at once (a large group's pages do not hold up the pairs' jobs). */
const JOBS_EXPANDING = 32;
const MAX_BATCH = 100;
/** How often a worker moves the deferred conversation jobs that are due back into expansion. */
const RELEASE_EVERY_MS = 100;
/** How often a worker forgets what it delivered to users past the lifecycle's window. */
const TRIM_SHOWN_EVERY_MS = 60_000;
const TRIM_SHOWN_LIMIT = 1_000;

/**
 * Starts offline delivery's workers in this process: the expansion of jobs (a consumer of the
 * group `bubble`, claiming a dead consumer's jobs) into the due set, and the senders (due users
 * in batches, stored before their first request, retried by whichever worker is alive).
 */
export async function startDeliveryWorkers(
  redis: RedisClient,
  keys: RedisKeys,
  service: BadgeService,
  options: DeliveryWorkersOptions,
): Promise<DeliveryWorkers> {
  const workers = new Workers(redis, keys, service, options);
  await workers.start();
  return workers;
}

class Workers implements DeliveryWorkers {
  readonly metrics: WebhookMetrics;
  private readonly queue: RedisWebhookQueue;
  private readonly reader: RedisClient;
  private readonly target: WebhookTarget;
  private readonly logger: Logger;
  private readonly o: Required<Omit<DeliveryWorkersOptions, 'registry' | 'logger'>>;
  private running = true;
  private loops: Promise<void>[] = [];
  private inFlight = 0;
  private readonly requests = new Set<Promise<void>>();
  private readonly expansions = new Set<Promise<void>>();
  private readonly wakers = new Set<() => void>();

  constructor(
    redis: RedisClient,
    keys: RedisKeys,
    private readonly service: BadgeService,
    options: DeliveryWorkersOptions,
  ) {
    this.o = {
      timeoutMs: 5_000,
      maxAttempts: 8,
      minIntervalMs: 2_000,
      retryBaseMs: 1_000,
      retryMaxMs: 300_000,
      queueMax: 1_000_000,
      concurrency: 8,
      claimMs: 30_000,
      leaseMs: 10_000,
      pageSize: 500,
      batchSize: MAX_BATCH,
      pollMs: 50,
      blockMs: 1_000,
      ...withoutUndefined(options),
    };
    if (!Number.isInteger(this.o.batchSize) || this.o.batchSize < 1 || this.o.batchSize > MAX_BATCH)
      throw new RangeError(`batchSize must be 1 to ${MAX_BATCH}`);
    this.queue = new RedisWebhookQueue(redis, keys);
    // A cluster duplicates into a cluster; the union's two duplicate() signatures just don't unify.
    this.reader = (redis as { duplicate(): RedisClient }).duplicate();
    // The blocking read's connection: its failures show as failed reads.
    this.reader.on('error', () => {});
    this.target = webhookTarget(options.url);
    this.logger = (options.logger ?? pino({ level: 'silent' })).child({
      module: 'webhook',
      webhook: this.target.origin,
    });
    this.metrics = new WebhookMetrics(options.registry ?? new Registry(), () => this.stats());
  }

  async start(): Promise<void> {
    await this.queue.ensureGroup();
    this.loops = [this.expandLoop(), this.sendLoop()];
  }

  stats(): Promise<WebhookQueueStats> {
    return this.queue.stats(this.now());
  }

  async close(): Promise<void> {
    this.running = false;
    this.wakeAll();
    this.reader.disconnect();
    await Promise.all(this.loops);
    await Promise.allSettled([...this.requests]);
  }

  private now(): number {
    return this.service.clock.now();
  }

  // ---- jobs → due users ----

  /** Reads and claims jobs while fewer than JOBS_EXPANDING are being expanded. */
  private async expandLoop(): Promise<void> {
    let claimedAt = 0;
    while (this.running) {
      try {
        const free = JOBS_EXPANDING - this.expansions.size;
        if (free <= 0) {
          await Promise.race(this.expansions);
          continue;
        }
        let entries: WebhookJobEntry[] = [];
        const now = this.now();
        if (now - claimedAt >= this.o.claimMs / 2) {
          claimedAt = now;
          entries = await this.queue.claimJobs(this.o.consumer, this.o.claimMs, free);
        }
        if (entries.length === 0) {
          entries = await this.queue.readJobs(this.reader, this.o.consumer, free, this.o.blockMs);
        }
        for (const entry of entries) this.startExpansion(entry);
      } catch (err) {
        if (!this.running) break;
        this.logger.warn({ err }, 'offline delivery: reading jobs failed');
        await this.pause(Math.max(this.o.pollMs, 500));
      }
    }
    await Promise.allSettled([...this.expansions]);
  }

  private startExpansion(entry: WebhookJobEntry): void {
    const tracked = this.expand(entry)
      .catch((err: unknown) => {
        // The job stays pending in this consumer: it is claimed again once idle.
        if (this.running)
          this.logger.warn({ err, job: entry.id }, 'offline delivery: a job failed');
      })
      .finally(() => this.expansions.delete(tracked));
    this.expansions.add(tracked);
  }

  /** Schedules the job's users page by page from where it stopped; the last page acknowledges it. */
  private async expand(entry: WebhookJobEntry): Promise<void> {
    const job = parseJob(entry.job);
    if (!job) {
      this.logger.warn({ job: entry.id }, 'offline delivery: a job that is not one, dropped');
      await this.queue.finishJob(entry.id);
      return;
    }
    const reason = reasonOfJob(job);
    const items = 'items' in job ? job.items : undefined;
    // A job read for the first time has no cursor yet.
    let cursor = entry.resumed ? await this.queue.jobCursor(entry.id) : '0';
    // Only the ack was left (a page scheduled by an earlier version of the script).
    if (cursor === JOB_DONE) {
      await this.queue.finishJob(entry.id);
      return;
    }
    if (cursor === '0' && job.kind === 'conversation') {
      const admitted = await this.queue.admitExpansion({
        now: this.now(),
        intervalMs: this.o.minIntervalMs,
        consumer: this.o.consumer,
        job: entry.id,
        conversation: job.conversation,
        maxSeq: job.maxSeq,
        senders: job.senders,
        items,
      });
      if (admitted !== 'expand') {
        if (admitted === 'merged') this.metrics.jobsMerged.inc();
        return;
      }
    }
    if (cursor === '0') this.metrics.expansions.inc({ kind: job.kind });
    const activeSince = () => this.now() - this.service.rules.inactiveDays * DAY_MS;
    while (cursor !== JOB_DONE) {
      if (!this.running) return;
      const page = await pageOfJob(this.queue, job, cursor, this.o.pageSize, activeSince);
      const nextCursor = page.next === '0' ? JOB_DONE : page.next;
      // A lowered user is due, online too, if bubble ever set their phone; a raising job's
      // lowered users are its senders: their own message read it for them.
      const scheduled = await this.queue.schedule({
        now: this.now(),
        intervalMs: this.o.minIntervalMs,
        bound: this.o.queueMax,
        consumer: this.o.consumer,
        job: entry.id,
        nextCursor,
        users: await this.offline(page.raised),
        reason,
        items,
        ifShown: page.lowered,
        ifShownReason: lowers(job) ? reason : 'read',
      });
      // Another worker claimed the job (this one was taken for dead): it resumes it.
      if (!scheduled) return;
      this.counted(scheduled);
      cursor = nextCursor;
    }
  }

  private counted(scheduled: ScheduledPage): void {
    this.metrics.coalesced.inc(scheduled.coalesced);
    if (scheduled.shed > 0) {
      this.metrics.shed.inc(scheduled.shed);
      this.logger.warn({ shed: scheduled.shed }, 'offline delivery: queue full, oldest shed');
    }
  }

  /** The users of `users` with no live connection (the others get their badge live). */
  private async offline(users: readonly string[]): Promise<string[]> {
    if (users.length === 0) return [];
    const online = await this.queue.onlineAmong(users);
    const offline = users.filter((_, i) => !online[i]);
    this.metrics.skippedOnline.inc(users.length - offline.length);
    return offline;
  }

  // ---- due users → requests ----

  private async sendLoop(): Promise<void> {
    let releasedAt = 0;
    let trimmedAt = 0;
    while (this.running) {
      let started = 0;
      try {
        const now = this.now();
        if (now - trimmedAt >= TRIM_SHOWN_EVERY_MS) {
          trimmedAt = now;
          const cutoff = now - this.service.rules.inactiveDays * DAY_MS;
          await this.queue.trimShown(cutoff, TRIM_SHOWN_LIMIT);
        }
        // Deferred conversation jobs due go back to the jobs stream (any worker expands them).
        if (now - releasedAt >= RELEASE_EVERY_MS) {
          releasedAt = now;
          await this.queue.releaseDeferred(now, JOBS_EXPANDING);
        }
        const free = this.o.concurrency - this.inFlight;
        if (free > 0) {
          const batchLease = now + this.o.timeoutMs + this.o.leaseMs;
          for (const batch of await this.queue.claimBatches(now, batchLease, free)) {
            started++;
            this.launch(this.attempt(batch.id, batch.body, usersOf(batch.body), batch.attempt));
          }
        }
        // Every free slot filled from one read: a read per batch made the round trip, not the
        // work, what bounded the batches in flight.
        const slots = this.o.concurrency - this.inFlight;
        if (slots > 0) {
          const due = await this.queue.takeDue(
            now,
            now + this.o.leaseMs,
            slots * this.o.batchSize,
            this.o.minIntervalMs,
          );
          for (let first = 0; first < due.length; first += this.o.batchSize) {
            started++;
            this.launch(this.prepare(due.slice(first, first + this.o.batchSize)));
          }
        }
      } catch (err) {
        if (!this.running) return;
        this.logger.warn({ err }, 'offline delivery: taking due users failed');
        await this.pause(Math.max(this.o.pollMs, 500));
      }
      if (started === 0 || this.inFlight >= this.o.concurrency) await this.pause(this.o.pollMs);
    }
  }

  private launch(work: Promise<void>): void {
    this.inFlight++;
    const tracked = work
      .catch((err: unknown) => this.logger.warn({ err }, 'offline delivery: a batch failed'))
      .finally(() => {
        this.inFlight--;
        this.requests.delete(tracked);
        this.wakeAll();
      });
    this.requests.add(tracked);
  }

  /**
   * Computes the due users' badges as a cold start does and keeps the ones with something to
   * send (sync-decision.ts), stores the batch with what it shows them (its id, body and
   * attempt) and makes its first request.
   */
  private async prepare(due: readonly DueUser[]): Promise<void> {
    const users = due.map((d) => d.user);
    const [online, badges] = await Promise.all([
      this.queue.onlineAmong(users),
      this.service.badges(users),
    ]);
    const now = this.now();
    const deliveries: WebhookDelivery[] = [];
    const left: string[] = [];
    due.forEach((d, i) => {
      const delivery = deliveryFor(d, online[i]!, badges[i]!, now);
      if (delivery) deliveries.push(delivery);
      else {
        left.push(d.user);
        if (online[i]) this.metrics.skippedOnline.inc();
        else this.metrics.skippedUnchanged.inc();
      }
    });
    const id = deliveries.length > 0 ? randomUUID() : '';
    const body = JSON.stringify({ id, deliveries });
    await this.queue.storeBatch({
      id,
      body,
      leaseUntil: this.now() + this.o.timeoutMs + this.o.leaseMs,
      now,
      sent: deliveries.map((d) => ({ user: d.user, total: d.badge.total, seq: d.seq })),
      left,
    });
    if (id !== '') await this.attempt(id, body, usersOf(body), 1);
  }

  private async attempt(
    id: string,
    body: string,
    users: readonly string[],
    attempt: number,
  ): Promise<void> {
    const outcome = await postDelivery(
      this.target,
      this.o.secret,
      id,
      body,
      this.o.timeoutMs,
      this.now(),
    );
    if (outcome.kind === 'ok') {
      this.metrics.requests.inc({ outcome: 'ok' });
      if (await this.queue.finishBatch(id, this.now(), this.o.minIntervalMs, users)) {
        this.metrics.deliveries.inc({ outcome: 'sent' }, users.length);
      }
      return;
    }
    if (outcome.kind === 'dead') {
      await this.deadLetter(id, body, users, attempt, outcome.error, outcome.status, 'rejected');
      return;
    }
    if (attempt >= this.o.maxAttempts) {
      await this.deadLetter(id, body, users, attempt, outcome.error, outcome.status, 'attempts');
      return;
    }
    const delay = Math.max(
      backoffMs(attempt, this.o.retryBaseMs, this.o.retryMaxMs),
      outcome.retryAfterMs ?? 0,
    );
    await this.queue.retryBatch(id, this.now() + delay);
    this.metrics.requests.inc({ outcome: 'retry' });
    this.metrics.retries.inc();
    this.logger.info(
      { delivery: id, attempt, status: outcome.status, error: outcome.error, delayMs: delay },
      'offline delivery: request failed, retrying',
    );
  }

  private async deadLetter(
    id: string,
    body: string,
    users: readonly string[],
    attempts: number,
    error: string,
    status: number | null,
    reason: 'rejected' | 'attempts',
  ): Promise<void> {
    await this.queue.deadLetter({ id, body, error, attempts, status });
    await this.queue.finishBatch(id, 0, this.o.minIntervalMs, users);
    this.metrics.requests.inc({ outcome: 'dead' });
    this.metrics.deadLettered.inc({ reason });
    this.metrics.deliveries.inc({ outcome: 'dead' }, users.length);
    this.logger.warn(
      { delivery: id, attempts, status, error, users: users.length },
      'offline delivery: given up, dead-lettered',
    );
  }

  /** Waits `ms`, or less when a request ends or the workers close. */
  private pause(ms: number): Promise<void> {
    if (!this.running) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wakers.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wakers.add(done);
    });
  }

  private wakeAll(): void {
    for (const wake of [...this.wakers]) wake();
  }
}

function usersOf(body: string): string[] {
  const parsed = JSON.parse(body) as { deliveries: Array<{ user: string }> };
  return parsed.deliveries.map((d) => d.user);
}

function withoutUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
