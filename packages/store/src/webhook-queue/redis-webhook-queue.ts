import type { RedisClient } from '../redis/connect.js';
import type { RedisKeys } from '../redis/keys.js';
import { readNewEntries } from '../redis/read-group.js';
import { scripts, type ScriptRunner } from '../redis/scripts.js';
import { ScriptStatus } from '../redis/script-status.js';
import { joinItems, shownBadge, splitItems } from './due-entries.js';
import { onlineAmong } from './online-among.js';
import { webhookScripts, type WebhookScripts } from './webhook-scripts.js';
import { slotSpreadOf, type SlotSpread } from '../redis/slot-spread.js';

import {
  WEBHOOK_GROUP,
  type ClaimedBatch,
  type DeadDelivery,
  type DueUser,
  type ScheduledPage,
  type SentBadge,
  type ShownBadge,
  type WebhookItem,
  type WebhookJobEntry,
  type WebhookQueueStats,
} from './webhook-queue.js';

const DEAD_LETTERS_MAX = 100_000;

/**
 * Offline delivery on Redis: the jobs stream and its consumer group, the due set of users, the
 * leases of the users being prepared, the stored batches and their retries. Every key but the
 * dead letters shares the hash tag {w}, so each step is one script (docs/redis-keys.md).
 */
export class RedisWebhookQueue {
  private readonly run: ScriptRunner;
  private readonly w: WebhookScripts;
  private readonly spread: SlotSpread;
  private readonly k: Record<
    | 'jobs'
    | 'cursors'
    | 'due'
    | 'reasons'
    | 'since'
    | 'last'
    | 'inflight'
    | 'leased'
    | 'pending'
    | 'batches'
    | 'attempts'
    | 'retry'
    | 'deferred'
    | 'deferDue'
    | 'expanded'
    | 'items'
    | 'shown'
    | 'shownat',
    string
  >;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: RedisKeys,
  ) {
    this.run = scripts(redis);
    this.w = webhookScripts(redis);
    this.spread = slotSpreadOf(redis);
    const part = (name: string) => keys.webhook(name);
    this.k = {
      jobs: part('jobs'),
      cursors: part('cursors'),
      due: part('due'),
      reasons: part('reasons'),
      since: part('since'),
      last: part('last'),
      inflight: part('inflight'),
      leased: part('leased'),
      pending: part('pending'),
      batches: part('batches'),
      attempts: part('attempts'),
      retry: part('retry'),
      deferred: part('deferred'),
      deferDue: part('deferdue'),
      expanded: part('expanded'),
      items: part('items'),
      shown: part('shown'),
      shownat: part('shownat'),
    };
  }

  get jobsKey(): string {
    return this.k.jobs;
  }

  /** One XADD: the whole cost of a write's offline delivery on the ingest path. */
  async appendJob(job: string): Promise<string> {
    return (await this.redis.xadd(this.k.jobs, '*', 'job', job))!;
  }

  /** Creates the consumer group (and the stream) when missing. */
  async ensureGroup(): Promise<void> {
    try {
      await this.redis.xgroup('CREATE', this.k.jobs, WEBHOOK_GROUP, '0', 'MKSTREAM');
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith('BUSYGROUP')) throw err;
    }
  }

  /**
   * New jobs for `consumer`, blocking up to `blockMs` on `reader` (a connection of its own).
   * The group is created again when Redis lost it.
   */
  async readJobs(
    reader: RedisClient,
    consumer: string,
    count: number,
    blockMs: number,
  ): Promise<WebhookJobEntry[]> {
    const read = () => readNewEntries(reader, this.k.jobs, WEBHOOK_GROUP, consumer, count, blockMs);
    let reply;
    let resumed = false;
    try {
      reply = await read();
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith('NOGROUP')) throw err;
      await this.ensureGroup();
      resumed = true;
      reply = await read();
    }
    return reply.map(([id, fields]) => ({
      id,
      job: fieldOf(fields ?? [], 'job'),
      resumed,
    }));
  }

  /** Jobs idle longer than `minIdleMs` in any consumer (a dead gateway's), now `consumer`'s. */
  async claimJobs(consumer: string, minIdleMs: number, count: number): Promise<WebhookJobEntry[]> {
    let reply: [string, Array<[string, string[] | null]>, ...unknown[]];
    try {
      reply = (await this.redis.xautoclaim(
        this.k.jobs,
        WEBHOOK_GROUP,
        consumer,
        minIdleMs,
        '0-0',
        'COUNT',
        count,
      )) as typeof reply;
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith('NOGROUP')) throw err;
      await this.ensureGroup();
      return [];
    }
    return reply[1].map(([id, fields]) => ({
      id,
      job: fields ? fieldOf(fields, 'job') : null,
      resumed: true,
    }));
  }

  /** Where the job's expansion stopped: '0' to start, JOB_DONE when only the ack is left. */
  async jobCursor(id: string): Promise<string> {
    return (await this.redis.hget(this.k.cursors, id)) ?? '0';
  }

  /**
   * Schedules a page of users (each with the reason of the job, and its items) and keeps the
   * job's cursor in the same step; after the last page (JOB_DONE) the job is acknowledged and
   * forgotten in that step too (job '' for none: users made due outside a job). `ifShown` users
   * (with `ifShownReason`, `reason` by default, and no items) are scheduled only when bubble
   * delivered to them before (or is delivering now): a decrease can be due only for a user whose
   * phone bubble set.
   * Null when the job was claimed by another consumer meanwhile.
   */
  async schedule(page: {
    now: number;
    intervalMs: number;
    bound: number;
    consumer: string;
    job: string;
    nextCursor: string;
    users: readonly string[];
    reason: string;
    items?: readonly WebhookItem[] | undefined;
    ifShown?: readonly string[] | undefined;
    ifShownReason?: string | undefined;
  }): Promise<ScheduledPage | null> {
    const ifShown = page.ifShown ?? [];
    const [added, coalesced, shed] = await this.w.scheduleDeliveries(
      [
        this.k.due,
        this.k.reasons,
        this.k.since,
        this.k.last,
        this.k.cursors,
        this.k.jobs,
        this.k.items,
        this.k.shown,
        this.k.inflight,
        this.k.pending,
      ],
      [
        page.now,
        page.intervalMs,
        page.bound,
        WEBHOOK_GROUP,
        page.consumer,
        page.job,
        page.nextCursor,
        page.reason,
        joinItems(page.items),
        page.users.length,
        page.ifShownReason ?? page.reason,
        ...page.users,
        ...ifShown,
      ],
    );
    if (added === ScriptStatus.Refused) return null;
    return { added: added!, coalesced: coalesced!, shed: shed! };
  }

  /**
   * Whether a conversation job is expanded now ('expand', recorded as the conversation's last
   * expansion) or was merged into the conversation's deferred job, due an interval after that
   * expansion, and acknowledged ('merged'); null when another consumer claimed it meanwhile.
   */
  async admitExpansion(request: {
    now: number;
    intervalMs: number;
    consumer: string;
    job: string;
    conversation: string;
    maxSeq: number;
    senders: readonly string[];
    items?: readonly WebhookItem[] | undefined;
  }): Promise<'expand' | 'merged' | null> {
    const admitted = await this.w.deferExpansion(
      [this.k.jobs, this.k.cursors, this.k.deferred, this.k.deferDue, this.k.expanded],
      [
        request.now,
        request.intervalMs,
        WEBHOOK_GROUP,
        request.consumer,
        request.job,
        request.conversation,
        request.maxSeq,
        request.items && request.items.length > 0 ? JSON.stringify(request.items) : '',
        ...request.senders,
      ],
    );
    return admitted === ScriptStatus.Done
      ? 'expand'
      : admitted === ScriptStatus.Unchanged
        ? 'merged'
        : null;
  }

  /** Appends up to `limit` deferred jobs due by `now` to the jobs stream again; how many. */
  async releaseDeferred(now: number, limit: number): Promise<number> {
    return this.w.releaseDeferred([this.k.jobs, this.k.deferred, this.k.deferDue], [now, limit]);
  }

  /** Acknowledges a job fully expanded (or not a job) and forgets it. */
  async finishJob(id: string): Promise<void> {
    await this.redis
      .multi()
      .xack(this.k.jobs, WEBHOOK_GROUP, id)
      .xdel(this.k.jobs, id)
      .hdel(this.k.cursors, id)
      .exec();
  }

  /** Up to `limit` users due by `now`, leased to the caller until `leaseUntil`. */
  async takeDue(
    now: number,
    leaseUntil: number,
    limit: number,
    intervalMs: number,
  ): Promise<DueUser[]> {
    const flat = await this.w.takeDue(
      [
        this.k.due,
        this.k.reasons,
        this.k.since,
        this.k.inflight,
        this.k.leased,
        this.k.pending,
        this.k.last,
        this.k.items,
        this.k.shown,
      ],
      [now, leaseUntil, limit, intervalMs],
    );
    const taken: DueUser[] = [];
    for (let i = 0; i < flat.length; i += 4) {
      taken.push({
        user: flat[i]!,
        reasons: flat[i + 1]!.split(',').filter(Boolean),
        items: splitItems(flat[i + 2]!),
        shown: shownBadge(flat[i + 3]!),
      });
    }
    return taken;
  }

  /**
   * Stores a batch before its first request (id '' when no user is sent) with what it shows each
   * of its users, and ends the lease of its users and of the ones left out, in one step.
   */
  async storeBatch(batch: {
    id: string;
    body: string;
    leaseUntil: number;
    now: number;
    sent: readonly SentBadge[];
    left: readonly string[];
  }): Promise<void> {
    const sent: Array<string | number> = [];
    for (const { user, total, seq } of batch.sent) sent.push(user, total, seq);
    await this.w.storeBatch(
      [
        this.k.inflight,
        this.k.leased,
        this.k.batches,
        this.k.attempts,
        this.k.retry,
        this.k.pending,
        this.k.items,
        this.k.shown,
        this.k.shownat,
      ],
      [
        batch.id,
        batch.body,
        batch.leaseUntil,
        batch.now,
        batch.sent.length,
        ...sent,
        ...batch.left,
      ],
    );
  }

  /** What bubble last delivered to `user`, null when never (or forgotten). */
  async shown(user: string): Promise<ShownBadge | null> {
    return shownBadge((await this.redis.hget(this.k.shown, user)) ?? '');
  }

  /**
   * Forgets, up to `limit` at a time, what bubble delivered to users it has not delivered to
   * since `cutoff` (the lifecycle's window); how many.
   */
  async trimShown(cutoff: number, limit: number): Promise<number> {
    return this.w.trimShown([this.k.shown, this.k.shownat], [cutoff, limit]);
  }

  /**
   * One page of the users delivered to at or after `since` (those whose phone may show a post
   * deleted since): [next cursor, '0' after the last page; users].
   */
  async scanShownSince(since: number, cursor: string, count: number): Promise<[string, string[]]> {
    const offset = Number(cursor) || 0;
    const users = await this.redis.zrangebyscore(
      this.k.shownat,
      since,
      '+inf',
      'LIMIT',
      offset,
      count,
    );
    return [users.length < count ? '0' : String(offset + users.length), users];
  }

  /** Up to `limit` stored batches due for an attempt, leased to the caller. */
  async claimBatches(now: number, leaseUntil: number, limit: number): Promise<ClaimedBatch[]> {
    const flat = await this.w.claimBatches(
      [this.k.retry, this.k.batches, this.k.attempts],
      [now, leaseUntil, limit],
    );
    const claimed: ClaimedBatch[] = [];
    for (let i = 0; i < flat.length; i += 3) {
      claimed.push({
        id: String(flat[i]),
        body: String(flat[i + 1]),
        attempt: Number(flat[i + 2]),
      });
    }
    return claimed;
  }

  /** The batch's next attempt, unless it was finished meanwhile. */
  async retryBatch(id: string, nextAt: number): Promise<void> {
    await this.redis.zadd(this.k.retry, 'XX', nextAt, id);
  }

  /** Forgets a batch: delivered at `deliveredAt`, or given up (0). False when already gone. */
  async finishBatch(
    id: string,
    deliveredAt: number,
    intervalMs: number,
    users: readonly string[],
  ): Promise<boolean> {
    const stored = await this.w.finishBatch(
      [this.k.retry, this.k.batches, this.k.attempts, this.k.pending, this.k.last],
      [id, deliveredAt, intervalMs, ...users],
    );
    return stored === 1;
  }

  /** Appends a given-up delivery to the dead letters (its own key, outside {w}). */
  async deadLetter(dead: DeadDelivery): Promise<void> {
    await this.redis.xadd(
      this.keys.webhookDead(),
      'MAXLEN',
      '~',
      DEAD_LETTERS_MAX,
      '*',
      'id',
      dead.id,
      'body',
      dead.body,
      'error',
      dead.error,
      'attempts',
      dead.attempts,
      'status',
      dead.status === null ? '' : dead.status,
    );
  }

  async deadLetters(count = 100): Promise<DeadDelivery[]> {
    const entries = await this.redis.xrange(this.keys.webhookDead(), '-', '+', 'COUNT', count);
    return entries.map(([, fields]) => {
      const status = fieldOf(fields, 'status');
      return {
        id: fieldOf(fields, 'id') ?? '',
        body: fieldOf(fields, 'body') ?? '',
        error: fieldOf(fields, 'error') ?? '',
        attempts: Number(fieldOf(fields, 'attempts') ?? 0),
        status: status ? Number(status) : null,
      };
    });
  }

  /** presence.isOnline() of each user, in input order (online-among.ts). */
  async onlineAmong(users: readonly string[]): Promise<boolean[]> {
    return onlineAmong(this.run, this.spread, this.keys, users);
  }

  /** One page of a conversation's members: [cursor, member, value, member, value, …]. */
  async scanMembers(
    conversation: string,
    cursor: string,
    count: number,
  ): Promise<[string, string[]]> {
    return this.redis.hscan(this.keys.conversationMembers(conversation), cursor, 'COUNT', count);
  }

  /** One page of the users' last sightings: [cursor, user, ms, user, ms, …]. */
  async scanSeen(cursor: string, count: number): Promise<[string, string[]]> {
    return this.redis.zscan(this.keys.lastSeen(), cursor, 'COUNT', count);
  }

  async stats(now: number): Promise<WebhookQueueStats> {
    const [queued, oldest, retrying, dead, jobs, deferred] = await Promise.all([
      this.redis.zcard(this.k.due),
      this.redis.zrange(this.k.since, '0', '0', 'WITHSCORES'),
      this.redis.hlen(this.k.batches),
      this.redis.xlen(this.keys.webhookDead()),
      this.redis.xlen(this.k.jobs),
      this.redis.zcard(this.k.deferDue),
    ]);
    const oldestAt = oldest[1] === undefined ? now : Number(oldest[1]);
    return {
      queued,
      oldestQueuedMs: Math.max(0, now - oldestAt),
      retrying,
      deadLetters: dead,
      jobs,
      deferred,
    };
  }
}

function fieldOf(fields: readonly string[], name: string): string | null {
  for (let i = 0; i < fields.length; i += 2) if (fields[i] === name) return fields[i + 1] ?? null;
  return null;
}
