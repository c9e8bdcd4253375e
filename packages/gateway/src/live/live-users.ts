import type { BadgeService, MissedReason } from '@bubble/badges';
import {
  BubbleError,
  ChangeList,
  FrameStem,
  epochCode,
  isNewerBadge,
  isNewerState,
  poolOf,
  type Badge,
  type BadgeChange,
  type BadgeChangeReader,
} from '@bubble/protocol';
import type { Logger } from 'pino';
import { HeldBadge } from './held-badge.js';
import { PushRing } from './push-ring.js';

export interface LiveUsersOptions {
  gatewayId: string;
  /** The badges it serves and, through `gatewayLink`, its held users' routes and presence. */
  service: Pick<BadgeService, 'badge' | 'badgeOf' | 'frameOf' | 'gatewayLink'>;
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

/** A re-read of held users' stored states after messages to the gateway may have been lost. */
export interface ResyncEvent {
  reasons: readonly MissedReason[];
  pools: number;
  /** Held users re-read. */
  users: number;
  /** Of them, those whose cached or pending badge the stored state replaced. */
  repaired: number;
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

/** Receives a held user's badge on every change (a socket of theirs). */
export interface BadgeListener {
  onBadge(badge: HeldBadge): void;
}

interface LiveUser {
  readonly user: string;
  /** Its place in the push queue's order (PushRing), while held. */
  slot: number;
  sockets: number;
  /** Set while the user polls without a socket: let go after this time. */
  pollerUntil: number;
  badge: HeldBadge | null;
  /**
   * A routed state newer than `badge`, waiting for its turn in the push queue, kept as the
   * fields of its HeldBadge (its stem is `stem`): a state superseded before its turn costs no
   * object. `pendingCounts` is null when none waits.
   */
  pendingCounts: string | null;
  pendingVersion: number;
  pendingComputedAt: number;
  /** What the frames of the user's states in the current epoch begin with. */
  stem: FrameStem | null;
  /**
   * The epoch, its epochCode and the version of the newest state known here, pending or held:
   * a routed change is compared with them, most often as numbers alone.
   */
  newestEpoch: string | null;
  newestEpochCode: number;
  newestVersion: number;
  /** Whether `stem` is of the newest state's epoch. */
  stemIsNewest: boolean;
  /** When the oldest change the pending state stands for arrived (performance.now()). */
  pendingSince: number;
  /** Polls answered in a row from `badge` while the store could not be read. */
  staleAnswers: number;
  /** One socket (the common case) needs no set of its own. */
  listeners: BadgeListener | Set<BadgeListener> | null;
  /** Route and presence of a newly held user, written before anything is served for them. */
  ready: Promise<void>;
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
  private closed = false;
  /** Users with a pending change, served in the order of their slots, going round. */
  private readonly pushRing = new PushRing<LiveUser>();
  private pushScheduled = false;
  private routed = 0;
  private superseded = 0;
  private pushed = 0;
  /** Pools whose held users are to be re-read, and why. */
  private readonly missedPools = new Set<number>();
  private readonly missedReasons = new Set<MissedReason>();
  private resyncing = false;
  private resyncRetry: NodeJS.Timeout | undefined;
  /** The last check of the published counts failed: the store cannot be read. */
  private storeUnreadable = false;

  constructor(private readonly options: LiveUsersOptions) {
    this.log = options.logger.child({ module: 'live-users' });
  }

  get size(): number {
    return this.users.size;
  }

  pushStats(): PushStats {
    const { routed, superseded, pushed } = this;
    return { routed, superseded, pushed, backlog: this.pushRing.pending };
  }

  async start(): Promise<void> {
    const { service, gatewayId, presenceTtlMs } = this.options;
    this.unsubscribe = await service.gatewayLink.subscribe(
      gatewayId,
      (changes) => this.deliver(changes),
      {
        onMissed: (pools, reason) => this.missed(pools, reason),
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
    if (!live) return;
    removeListener(live, listener);
    live.sockets = Math.max(0, live.sockets - 1);
    if (live.sockets === 0 && live.pollerUntil <= Date.now()) await this.release(user);
  }

  /**
   * Whether the badges cached here may be behind the store: it could not be read at the last
   * check, or lost messages are being re-read.
   */
  get stale(): boolean {
    return this.storeUnreadable || this.resyncing || this.missedPools.size > 0;
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
    if (existing) this.takePending(existing);
    if (existing?.badge) {
      const stale = this.stale;
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
    const badge = (await this.freshBadge(user, live)).badge;
    return { badge, fromCache: false, stale: false, intervalSeconds };
  }

  /** A badge this gateway computed itself (a read): cache it and hand it to the user's sockets. */
  publishLocal(badge: Badge | HeldBadge): void {
    const held = badge instanceof HeldBadge ? badge : HeldBadge.of(badge);
    const live = this.users.get(held.badge.user);
    if (live) this.offer(live, held);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    clearTimeout(this.resyncRetry);
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
    const live: LiveUser = {
      user,
      slot: -1,
      sockets: 0,
      pollerUntil: 0,
      badge: null,
      pendingCounts: null,
      pendingVersion: 0,
      // Times and epoch codes are doubles: fields that start as one never change shape.
      pendingComputedAt: NaN,
      stem: null,
      newestEpoch: null,
      newestEpochCode: NaN,
      newestVersion: 0,
      stemIsNewest: false,
      pendingSince: NaN,
      staleAnswers: 0,
      listeners: null,
      ready: RESOLVED,
    };
    claim(live);
    live.slot = this.pushRing.claim(live);
    this.users.set(user, live);
    const { service, gatewayId, presenceTtlMs } = this.options;
    // Route and presence before the badge is computed, so no change after it is missed.
    live.ready = service.gatewayLink.hold(gatewayId, [user], presenceTtlMs);
    try {
      await live.ready;
      if (this.users.get(user) === live) live.ready = RESOLVED;
    } catch (err) {
      if (this.users.get(user) === live) this.forget(user);
      throw err;
    }
    return live;
  }

  /** The badge as of now, or a newer one pushed meanwhile. */
  private async freshBadge(user: string, live: LiveUser): Promise<HeldBadge> {
    const badge = HeldBadge.of(await this.options.service.badge(user, { seen: true }));
    this.offer(live, badge);
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
    live.pendingCounts = null;
    this.pushRing.release(live.slot);
    live.slot = -1;
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
   * place in the push queue, which is sent in slices between which I/O runs. A user who
   * changes again before their turn gets one frame with the newest badge, so when changes come
   * faster than frames can be written the gateway sends fewer frames, never stale ones, and
   * never falls behind.
   */
  private deliver(changes: BadgeChangeReader): number {
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
      this.routed++;
      if (live.pendingCounts === null) {
        this.pushRing.mark(live.slot);
        if (Number.isNaN(arrivedAt)) arrivedAt = performance.now();
        live.pendingSince = arrivedAt;
      } else {
        this.superseded++;
      }
      live.pendingCounts = counts;
      live.pendingVersion = version;
      live.pendingComputedAt = computedAt;
    }
    this.schedulePushes();
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

  private missed(pools: readonly number[], reason: MissedReason): void {
    for (const pool of pools) this.missedPools.add(pool);
    this.missedReasons.add(reason);
    void this.resync();
  }

  /**
   * Re-reads the stored states of the users held here in the pools whose messages may have
   * been lost, and takes them as routed changes: only a newer state replaces what a user has
   * (isNewerBadge), so a client's versions still only rise within an epoch. Findings that come
   * while a re-read runs are re-read after it; a failed read is tried again after a check.
   */
  private async resync(): Promise<void> {
    if (this.resyncing || this.closed) return;
    this.resyncing = true;
    try {
      while (this.missedPools.size > 0 && !this.closed) {
        const pools = new Set(this.missedPools);
        const reasons = [...this.missedReasons];
        this.missedPools.clear();
        this.missedReasons.clear();
        const { gatewayLink } = this.options.service;
        // A loss may be Redis restarted or failed over, which loses routes and presence too:
        // written again first (one batch; losses are rare), so every change after the re-read
        // below is routed here.
        await this.renew();
        const users: string[] = [];
        for (const user of this.users.keys()) {
          if (pools.has(poolOf(user, gatewayLink.pools))) users.push(user);
        }
        let states: BadgeChange[];
        try {
          states = users.length === 0 ? [] : await gatewayLink.storedStates(users);
        } catch (err) {
          for (const pool of pools) this.missedPools.add(pool);
          for (const reason of reasons) this.missedReasons.add(reason);
          this.log.warn({ err, pools: pools.size }, 'could not re-read held users; retrying');
          this.retryResync();
          return;
        }
        const repaired = this.deliver(new ChangeList(states));
        const event = { reasons, pools: pools.size, users: users.length, repaired };
        this.options.onResync?.(event);
        this.log.warn(
          event,
          "pub/sub messages to this gateway may have been lost: re-read its users' badges",
        );
      }
    } finally {
      this.resyncing = false;
    }
  }

  private retryResync(): void {
    clearTimeout(this.resyncRetry);
    this.resyncRetry = setTimeout(
      () => void this.resync(),
      this.options.pubsubCheckMs || DEFAULT_PUBSUB_CHECK_MS,
    );
    this.resyncRetry.unref();
  }

  private schedulePushes(): void {
    if (this.pushScheduled || this.pushRing.pending === 0) return;
    this.pushScheduled = true;
    setImmediate(this.pushSlice);
  }

  private readonly pushSlice = (): void => {
    this.pushScheduled = false;
    const ring = this.pushRing;
    // A slice's frames are written within a few milliseconds: their wait ends at its start.
    const now = performance.now();
    for (let sent = 0; sent < PUSH_SLICE; sent++) {
      const live = ring.next();
      if (live === undefined) return;
      this.takePending(live, now);
    }
    this.schedulePushes();
  };

  /** Hands the user's pending state (if any) to their listeners now (`now`: performance.now()). */
  private takePending(live: LiveUser, now = performance.now()): void {
    const counts = live.pendingCounts;
    if (counts === null) return;
    live.pendingCounts = null;
    // Taken out of turn (a poll): its mark goes too. From the ring, it is cleared already.
    this.pushRing.unmark(live.slot);
    this.pushed++;
    this.options.onPushed?.((now - live.pendingSince) / 1000);
    const { pendingVersion, pendingComputedAt } = live;
    const badge = HeldBadge.pushed(
      live.stem!,
      pendingVersion,
      pendingComputedAt,
      counts,
      this.options.service,
    );
    this.offer(live, badge);
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
  private async renew(): Promise<void> {
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

const RESOLVED = Promise.resolve();

/** What a poll answers: the badge, and the `X-Poll-Interval` to send with it. */
export interface PollAnswer {
  badge: Badge;
  fromCache: boolean;
  /** Answered from the cache while the store could not be read (`X-Bubble-Stale: 1`). */
  stale: boolean;
  intervalSeconds: number;
}

/** The longest interval a stale answer asks pollers to wait (docs/api.md). */
export const STALE_POLL_CAP_SECONDS = 60;

/** The interval after `staleAnswers` stale answers in a row: doubled per answer, capped. */
export function stalePollInterval(intervalSeconds: number, staleAnswers: number): number {
  if (staleAnswers === 0) return intervalSeconds;
  return Math.min(STALE_POLL_CAP_SECONDS, intervalSeconds * 2 ** Math.min(staleAnswers, 16));
}

/** BUBBLE_PUBSUB_CHECK_MS's default. */
const DEFAULT_PUBSUB_CHECK_MS = 2_000;

/** Frames written per turn of the event loop; I/O runs between turns. */
const PUSH_SLICE = 512;

function addListener(live: LiveUser, listener: BadgeListener): void {
  const { listeners } = live;
  if (listeners === null) live.listeners = listener;
  else if (listeners instanceof Set) listeners.add(listener);
  else if (listeners !== listener) live.listeners = new Set([listeners, listener]);
}

function removeListener(live: LiveUser, listener: BadgeListener): void {
  const { listeners } = live;
  if (listeners === listener) live.listeners = null;
  else if (listeners instanceof Set) {
    listeners.delete(listener);
    if (listeners.size === 1) live.listeners = listeners.values().next().value!;
    else if (listeners.size === 0) live.listeners = null;
  }
}
