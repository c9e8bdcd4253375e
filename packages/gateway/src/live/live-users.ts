import type { BadgeService } from '@bubble/badges';
import {
  BubbleError,
  FrameStem,
  epochCode,
  isNewerBadge,
  isNewerState,
  poolOf,
  type Badge,
  type BadgeChangeReader,
} from '@bubble/protocol';
import type { Logger } from 'pino';
import { HeldBadge } from './held-badge.js';
import {
  addListener,
  markReady,
  newLiveUser,
  removeListener,
  type BadgeListener,
  type LiveUser,
} from './live-user.js';
import { PushQueue } from './push-queue.js';
import { Resync, type ResyncEvent } from './resync.js';

export interface LiveUsersOptions {
  gatewayId: string;
  /** The badges it serves and, through `gatewayLink`, its held users' routes and presence. */
  service: Pick<BadgeService, 'serveBadge' | 'badgeOf' | 'frameOf' | 'gatewayLink'>;
  logger: Logger;
  /** Presence and routes are renewed every third of it; a dead gateway's users lapse after it. */
  presenceTtlMs: number;
  /**
   * A poller not seen for this long is let go; asked at each poll, so it can follow the
   * interval the gateway advertises (three of them).
   */
  pollerTtlMs: () => number;
  /** Told, for every badge handed to a user's sockets from the push queue, how long it waited. */
  onPushed?: (waitedSeconds: number) => void;
  /**
   * How often the counts of messages published to this gateway are compared with those it
   * heard (BUBBLE_PUBSUB_CHECK_MS); a lost message is repaired within it and one read.
   */
  pubsubCheckMs?: number;
  /** Told of every finding of lost messages (`reason`) and of each re-read's repairs. */
  onResync?: (event: ResyncEvent) => void;
}

/** How the push queue is keeping up (totals since start, and the queue now). */
export interface PushStats {
  /** Changes routed here for users with sockets. */
  routed: number;
  /** Routed changes replaced by a newer one before their turn came: never sent. */
  superseded: number;
  /** Badges handed to users' sockets from the queue. */
  pushed: number;
  /** Users waiting for their turn now. */
  backlog: number;
}

/**
 * The users this gateway holds — through sockets or recent polls. Holding a user means: they
 * are online (presence, renewed in batches), their badge changes are routed to this gateway,
 * and their latest badge is cached here, so a poll that finds nothing new touches no Redis.
 */
export class LiveUsers {
  private readonly users = new Map<string, LiveUser>();
  private readonly log: Logger;
  private timer: NodeJS.Timeout | undefined;
  private unsubscribe: (() => Promise<void>) | undefined;
  private shut = false;
  /** Users with a pending change, served in the order of their slots, going round. */
  private readonly pushQueue: PushQueue;
  private readonly resync: Resync;
  /** The last check of the published counts failed: the store cannot be read. */
  private storeUnreadable = false;

  constructor(private readonly options: LiveUsersOptions) {
    this.log = options.logger.child({ module: 'live-users' });
    this.pushQueue = new PushQueue(
      options.service,
      (live, badge) => this.offer(live, badge),
      options.onPushed,
    );
    this.resync = new Resync(
      this,
      options.service.gatewayLink,
      this.log,
      options.pubsubCheckMs || DEFAULT_PUBSUB_CHECK_MS,
      options.onResync,
    );
  }

  /** Closed: nothing is held or renewed any more. */
  get closed(): boolean {
    return this.shut;
  }

  get size(): number {
    return this.users.size;
  }

  pushStats(): PushStats {
    const { routed, superseded, pushed, backlog } = this.pushQueue;
    return { routed, superseded, pushed, backlog };
  }

  async start(): Promise<void> {
    const { service, gatewayId, presenceTtlMs } = this.options;
    this.unsubscribe = await service.gatewayLink.subscribe(
      gatewayId,
      (changes) => this.deliver(changes),
      {
        onMissed: (pools, reason) => this.resync.missed(pools, reason),
        checkEveryMs: this.options.pubsubCheckMs ?? DEFAULT_PUBSUB_CHECK_MS,
        onCheckFailed: (err) => {
          this.storeUnreadable = true;
          this.log.warn({ err }, 'could not compare the messages published here with those heard');
        },
        onCheckPassed: () => {
          this.storeUnreadable = false;
        },
      },
    );
    this.timer = setInterval(() => void this.renew(), Math.max(200, Math.floor(presenceTtlMs / 3)));
    this.timer.unref();
  }

  /**
   * A socket of `user` opened: routes and presence first (so no change after this is missed),
   * then the badge as of now (computed on demand when the user was offline).
   */
  async attach(user: string, listener: BadgeListener): Promise<HeldBadge> {
    const live = await this.hold(user, (held) => {
      held.sockets++;
      addListener(held, listener);
    });
    return this.freshBadge(user, live);
  }

  async detach(user: string, listener: BadgeListener): Promise<void> {
    const live = this.users.get(user);
    // A listener never attached (its socket closed while attach() was still holding the user)
    // takes nobody else's place away.
    if (!live || !removeListener(live, listener)) return;
    live.sockets = Math.max(0, live.sockets - 1);
    if (live.sockets === 0 && live.pollerUntil <= Date.now()) await this.release(user);
  }

  /**
   * Whether the badges cached here may be behind the store: it could not be read at the last
   * check, or lost messages are being re-read.
   */
  get stale(): boolean {
    return this.storeUnreadable || this.resync.pending;
  }

  /**
   * A poll: the cached badge when the user is held here, else a cold start that holds them.
   * While the store cannot be read the cached badge is answered `stale`, with an interval that
   * doubles per stale answer in a row from `intervalSeconds` up to STALE_POLL_CAP_SECONDS (the
   * poller is held that long); a user not cached here is refused at once.
   */
  async poll(user: string, intervalSeconds: number): Promise<PollAnswer> {
    const existing = this.users.get(user);
    const now = Date.now();
    if (existing) this.pushQueue.take(existing);
    // Served without the feed: computed again, so an answer installed since is seen even when
    // it changed no count (then no newer badge is ever pushed to replace this one).
    // A failure leaves the badge held, answered stale as before.
    if (existing?.badge?.missingFeed && !this.storeUnreadable)
      await this.freshBadge(user, existing).catch(() => undefined);
    if (existing?.badge) {
      const stale = this.stale || existing.badge.missingFeed;
      existing.staleAnswers = stale ? existing.staleAnswers + 1 : 0;
      const interval = stalePollInterval(intervalSeconds, existing.staleAnswers);
      const holdFor = Math.max(this.options.pollerTtlMs(), 3 * interval * 1000);
      existing.pollerUntil = Math.max(existing.pollerUntil, now + holdFor);
      return { badge: existing.badge.badge, fromCache: true, stale, intervalSeconds: interval };
    }
    if (this.storeUnreadable) {
      throw new BubbleError('UB_ERR_UNAVAILABLE', 'the store cannot be read; poll again later');
    }
    const until = now + this.options.pollerTtlMs();
    const live = await this.hold(user, (held) => {
      held.pollerUntil = Math.max(held.pollerUntil, until);
    });
    const held = await this.freshBadge(user, live);
    return { badge: held.badge, fromCache: false, stale: held.missingFeed, intervalSeconds };
  }

  /** A badge this gateway computed itself (a read): cache it and hand it to the user's sockets. */
  publishLocal(badge: Badge | HeldBadge): void {
    const held = badge instanceof HeldBadge ? badge : HeldBadge.of(badge);
    const live = this.users.get(held.badge.user);
    if (live) this.offer(live, held);
  }

  async close(): Promise<void> {
    if (this.shut) return;
    this.shut = true;
    clearInterval(this.timer);
    this.resync.close();
    await this.unsubscribe?.();
    const users = [...this.users.keys()];
    for (const user of users) this.forget(user);
    await Promise.allSettled(users.map((user) => this.letGo(user)));
  }

  /**
   * Holds `user`: `claim` (a socket or a poll) is recorded at once, so a renewal running while
   * the route and presence are written cannot take the user for lapsed and let them go.
   */
  private async hold(user: string, claim: (live: LiveUser) => void): Promise<LiveUser> {
    const existing = this.users.get(user);
    if (existing) {
      claim(existing);
      await existing.ready;
      return existing;
    }
    const live = newLiveUser(user);
    claim(live);
    live.slot = this.pushQueue.claim(live);
    this.users.set(user, live);
    const { service, gatewayId, presenceTtlMs } = this.options;
    // Route and presence before the badge is computed, so no change after it is missed.
    live.ready = service.gatewayLink.hold(gatewayId, [user], presenceTtlMs);
    try {
      await live.ready;
      if (this.users.get(user) === live) markReady(live);
    } catch (err) {
      if (this.users.get(user) === live) this.forget(user);
      throw err;
    }
    return live;
  }

  /** The badge as of now, or a newer one pushed meanwhile. */
  private async freshBadge(user: string, live: LiveUser): Promise<HeldBadge> {
    const served = await this.options.service.serveBadge(user, { seen: true });
    const badge = HeldBadge.of(served.badge);
    badge.missingFeed = served.stale;
    this.offer(live, badge);
    // The same state as the one held, now with the feed: it replaces the one without.
    const held = live.badge;
    if (
      held?.missingFeed &&
      !badge.missingFeed &&
      held.epoch === badge.epoch &&
      held.version === badge.version
    )
      live.badge = badge;
    return live.badge ?? badge;
  }

  private async release(user: string): Promise<void> {
    this.forget(user);
    await this.letGo(user);
  }

  /** No longer held here: a pending change of theirs is dropped with their slot. */
  private forget(user: string): void {
    const live = this.users.get(user);
    if (!live) return;
    this.users.delete(user);
    this.pushQueue.release(live);
  }

  private async letGo(user: string): Promise<void> {
    const { service, gatewayId } = this.options;
    try {
      await service.gatewayLink.release(gatewayId, user);
    } catch (err) {
      this.log.warn({ err, user }, 'could not let a user go; their presence will lapse');
    }
  }

  /**
   * Routed changes are conflated per user: the newest waits as pending and the user takes one
   * place in the push queue (PushQueue). Returns how many changes were newer than what was held.
   */
  deliver(changes: BadgeChangeReader): number {
    const queue = this.pushQueue;
    let taken = 0;
    // The changes of one message arrived together: one reading of the clock for them all.
    let arrivedAt = NaN;
    while (changes.next()) {
      const live = this.users.get(changes.user);
      if (live === undefined) continue;
      // The epochs compared as codes, or where the change lies.
      const { version, epochCode } = changes;
      const newest = live.newestEpoch;
      const sameEpoch =
        newest !== null &&
        (epochCode >= 0 ? epochCode === live.newestEpochCode : changes.hasEpoch(newest));
      if (!isNewerState(sameEpoch, version, live.newestVersion)) continue;
      taken++;
      const stem = this.stemOf(live, changes, sameEpoch && live.stemIsNewest);
      live.newestEpoch = stem.epoch;
      live.newestEpochCode = epochCode;
      live.newestVersion = version;
      live.stemIsNewest = true;
      const computedAt = changes.readComputedAt();
      const counts = changes.readCountsText();
      if (live.listeners === null) {
        // A poller: its cached badge is all there is to update.
        this.offer(live, HeldBadge.pushed(stem, version, computedAt, counts, this.options.service));
        continue;
      }
      queue.routed++;
      if (live.pendingCounts === null) {
        queue.mark(live);
        if (Number.isNaN(arrivedAt)) arrivedAt = performance.now();
        live.pendingSince = arrivedAt;
      } else {
        queue.superseded++;
      }
      live.pendingCounts = counts;
      live.pendingVersion = version;
      live.pendingComputedAt = computedAt;
    }
    queue.schedule();
    return taken;
  }

  /**
   * The user's stem for the current change of `changes`, made anew when its epoch is another
   * (`epochOfStem`: the change is known to be of the stem's epoch).
   */
  private stemOf(live: LiveUser, changes: BadgeChangeReader, epochOfStem: boolean): FrameStem {
    const stem = live.stem;
    if (stem !== null && (epochOfStem || changes.hasEpoch(stem.epoch))) return stem;
    return (live.stem = new FrameStem(live.user, changes.readEpoch()));
  }

  /** The held users hashed into one of `pools` (a re-read's). */
  heldIn(pools: ReadonlySet<number>): string[] {
    const { pools: count } = this.options.service.gatewayLink;
    const users: string[] = [];
    for (const user of this.users.keys()) if (pools.has(poolOf(user, count))) users.push(user);
    return users;
  }

  /** Keeps the newest badge (isNewerBadge: greater version within an epoch; another epoch replaces). */
  private offer(live: LiveUser, badge: HeldBadge): void {
    if (!isNewerBadge(badge, live.badge)) return;
    live.badge = badge;
    if (isNewerState(live.newestEpoch === badge.epoch, badge.version, live.newestVersion)) {
      const { epoch } = badge;
      live.newestEpoch = epoch;
      live.newestEpochCode = epochCode(epoch, 0, epoch.length);
      live.newestVersion = badge.version;
      live.stemIsNewest = live.stem !== null && live.stem.epoch === epoch;
    }
    const { listeners } = live;
    if (listeners instanceof Set) for (const listener of listeners) listener.onBadge(badge);
    else listeners?.onBadge(badge);
  }

  /** Renews presence and routes of every held user in one batch; lets lapsed pollers go. */
  async renew(): Promise<void> {
    if (this.closed) return;
    const now = Date.now();
    const { service, gatewayId, presenceTtlMs } = this.options;
    const keep: string[] = [];
    const lapsed: string[] = [];
    for (const [user, live] of this.users) {
      if (live.sockets > 0 || live.pollerUntil > now) keep.push(user);
      else lapsed.push(user);
    }
    for (const user of lapsed) this.forget(user);
    try {
      if (keep.length > 0) await service.gatewayLink.hold(gatewayId, keep, presenceTtlMs);
      await Promise.all(lapsed.map((user) => this.letGo(user)));
    } catch (err) {
      this.log.warn({ err }, 'presence renewal failed; retrying next round');
    }
  }
}

/** What a poll answers: the badge, and the `X-Poll-Interval` to send with it. */
export interface PollAnswer {
  badge: Badge;
  fromCache: boolean;
  /** Answered from the cache while the store could not be read (`X-Bubble-Stale: 1`). */
  stale: boolean;
  intervalSeconds: number;
}

/** The longest interval a stale answer asks pollers to wait (docs/api.md). */
const STALE_POLL_CAP_SECONDS = 60;

/** The interval after `staleAnswers` stale answers in a row: doubled per answer, capped. */
function stalePollInterval(intervalSeconds: number, staleAnswers: number): number {
  if (staleAnswers === 0) return intervalSeconds;
  return Math.min(STALE_POLL_CAP_SECONDS, intervalSeconds * 2 ** Math.min(staleAnswers, 16));
}

/** BUBBLE_PUBSUB_CHECK_MS's default. */
const DEFAULT_PUBSUB_CHECK_MS = 2_000;
