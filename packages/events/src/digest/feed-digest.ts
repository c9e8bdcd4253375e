import { DAY_MS } from '@bubble/protocol';
import { RedisWebhookQueue, type RedisStore } from '@bubble/store';
import pino, { type Logger } from 'pino';
import { Registry } from 'prom-client';
import { DigestMetrics } from './digest-metrics.js';
import { DigestPass } from './digest-pass.js';
import { PostActivity } from './post-activity.js';

export interface FeedDigestOptions {
  /** BUBBLE_DIGEST_INTERVAL_MS: a user's feed is counted at most this often. */
  intervalMs: number;
  /** BUBBLE_DIGEST_DAYS: users seen (and offline) within this many days are counted. */
  days: number;
  /** BUBBLE_DIGEST_RATE: users this process looks at per second, at most. */
  rate: number;
  /** BUBBLE_WEBHOOK_MIN_INTERVAL_MS and BUBBLE_WEBHOOK_QUEUE_MAX, as the due set applies them. */
  webhookMinIntervalMs: number;
  queueMax: number;
  /** Users per page claimed; by default a tenth of a second's worth, 1 to 200. */
  pageSize?: number;
  registry?: Registry;
  logger?: Logger;
}

export interface DigestStats {
  /** Users handed to this process (each once a pass, in one process). */
  users: number;
  /**
   * Of them: online (their badge goes live), skipped (no followed author or topic had a post
   * stored or deleted since their badge was counted), changed (made due with reason feed).
   */
  online: number;
  skipped: number;
  changed: number;
  /** How far behind its schedule the pass was at this process's last claim (ms). */
  lagMs: number;
}

export interface FeedDigest {
  readonly metrics: DigestMetrics;
  stats(): DigestStats;
  close(): Promise<void>;
}

/** Pages one process has in flight at most. */
const PAGES_IN_FLIGHT = 4;

/** The reason a digest delivery carries (docs/api.md, "The feed on phones"). */
export const FEED_REASON = 'feed';

/**
 * Starts the feed digest in this process (docs/architecture.md, "The feed on phones"): about
 * once per `intervalMs`, each user seen within `days` and offline whose followed authors or
 * topics had a post stored or deleted since their badge was last counted is made due for
 * offline delivery with reason "feed"; the sender counts them then (once), stores and delivers.
 */
export async function startFeedDigest(
  store: RedisStore,
  options: FeedDigestOptions,
): Promise<FeedDigest> {
  const digest = new Digest(store, options);
  await digest.start();
  return digest;
}

class Digest implements FeedDigest {
  readonly metrics: DigestMetrics;
  private readonly queue: RedisWebhookQueue;
  private readonly pass: DigestPass;
  private readonly activity: PostActivity;
  private readonly logger: Logger;
  private readonly pageSize: number;
  private readonly counts: DigestStats = {
    users: 0,
    online: 0,
    skipped: 0,
    changed: 0,
    lagMs: 0,
  };
  private running = true;
  private loop: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private readonly pages = new Set<Promise<void>>();

  constructor(
    private readonly store: RedisStore,
    private readonly o: FeedDigestOptions,
  ) {
    this.queue = new RedisWebhookQueue(store.redis, store.keys);
    this.pass = new DigestPass(store.redis, store.keys);
    this.activity = new PostActivity(store.changes);
    this.logger = (o.logger ?? pino({ enabled: false })).child({ module: 'digest' });
    this.pageSize = o.pageSize ?? Math.min(200, Math.max(1, Math.round(o.rate / 10)));
    this.metrics = new DigestMetrics(o.registry ?? new Registry(), () => this.counts.lagMs);
  }

  async start(): Promise<void> {
    await this.activity.catchUp(this.store.clock.now());
    this.loop = this.run();
  }

  stats(): DigestStats {
    return { ...this.counts };
  }

  async close(): Promise<void> {
    this.running = false;
    this.wake?.();
    await this.loop;
    await Promise.all(this.pages);
  }

  private async run(): Promise<void> {
    const windowMs = this.o.days * DAY_MS;
    let lastPrune = 0;
    while (this.running) {
      const began = performance.now();
      let handed = 0;
      try {
        const now = this.store.clock.now();
        await this.activity.catchUp(now);
        if (now - lastPrune > this.o.intervalMs) {
          // A user not seen within the window is not looked at: older activity is not needed.
          this.activity.forget(now - windowMs - this.o.intervalMs);
          lastPrune = now;
        }
        const claim = await this.pass.next(now, this.o.intervalMs, windowMs, this.pageSize);
        this.counts.lagMs = claim.lagMs;
        if (claim.kind === 'wait') {
          await this.pause(Math.min(claim.waitMs, 1_000));
          continue;
        }
        handed = claim.users.length;
        // Pages overlap (their reads are round trips, not work): a few in flight at once.
        const page = this.digest(claim.users)
          .catch((err: unknown) => this.logger.warn({ err }, 'feed digest: a page failed'))
          .finally(() => this.pages.delete(page));
        this.pages.add(page);
        if (this.pages.size >= PAGES_IN_FLIGHT) await Promise.race(this.pages);
      } catch (err) {
        if (!this.running) return;
        this.logger.warn({ err }, 'feed digest: claiming a page failed');
        await this.pause(1_000);
        continue;
      }
      // The rate bound: the claims of n users are at least n / rate seconds apart.
      const owed = (handed * 1000) / this.o.rate - (performance.now() - began);
      if (owed > 0) await this.pause(Math.ceil(owed));
    }
  }

  /** One page: leaves out who is online and who cannot have changed, makes the others due. */
  private async digest(users: readonly string[]): Promise<void> {
    const online = await this.queue.onlineAmong(users);
    const offline = users.filter((_, i) => !online[i]);
    this.counts.users += users.length;
    this.counts.online += users.length - offline.length;
    this.metrics.users.inc({ outcome: 'online' }, users.length - offline.length);
    const { badges, follows, topics } = this.store;
    const looked = await Promise.all(
      offline.map(async (user) => {
        const [state, authors, followed] = await Promise.all([
          badges.load(user),
          follows.list(user),
          topics.list(user),
        ]);
        return { user, state, authors, followed };
      }),
    );
    // A post stored or deleted since the count moves the count (a live post is stamped now,
    // after every readAt): the sender counts these users once, stores and delivers the badge.
    const changed = looked
      .filter(
        ({ state, authors, followed }) =>
          state === null || this.activity.changedSince(authors, followed, state.computedAt),
      )
      .map(({ user }) => user);
    const skipped = looked.length - changed.length;
    this.counts.skipped += skipped;
    this.metrics.users.inc({ outcome: 'skipped' }, skipped);
    if (changed.length === 0) return;
    const now = this.store.clock.now();
    const scheduled = await this.queue.schedule({
      now,
      intervalMs: this.o.webhookMinIntervalMs,
      bound: this.o.queueMax,
      consumer: '',
      job: '',
      nextCursor: '',
      users: changed,
      reason: FEED_REASON,
    });
    this.counts.changed += changed.length;
    this.metrics.users.inc({ outcome: 'changed' }, changed.length);
    if (scheduled && scheduled.shed > 0) {
      this.logger.warn({ shed: scheduled.shed }, 'feed digest: delivery queue full, oldest shed');
    }
  }

  private pause(ms: number): Promise<void> {
    if (!this.running) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
    });
  }
}
