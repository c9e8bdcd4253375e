import { DAY_MS, poolOf, type Clock } from '@bubble/protocol';
import type {
  Assignment,
  BubbleStore,
  FencedBadgeWrite,
  HeldLock,
  KnownBadge,
  PostEvent,
  PoolLocks,
  SweepReport,
} from '@bubble/store';
import type { Logger } from 'pino';
import type { CoreMetrics } from './core-metrics.js';
import { FEED_FIELD, addExtraFields, extraFieldsOf, readStoredExtras } from '@bubble/badges';
import { ExtrasTracker, fieldsKey } from './extras-tracker.js';
import { FeedCounter } from './feed-counter.js';
import { growInt32 } from './intern-table.js';

export interface CoreNodeOptions {
  id: string;
  store: BubbleStore;
  locks: PoolLocks;
  clock: Clock;
  logger: Logger;
  metrics?: CoreMetrics;
  lookbackDays: number;
  /** Pool lease; extended every third of it. */
  leaseMs: number;
  /** The sweep period the leader ticks at; the core sweeps by itself when ticks stop. */
  tickMs: number;
  /** Where this node's operator endpoints answer, for /v1/cluster. */
  url?: string;
  /** Users recomputed from the stored sources per sweep, to find and repair drift. */
  reconcilePerSweep?: number;
  /** Most log entries read per pool (and from the post log) in one sweep. */
  maxEventsPerRead?: number;
  /** Most lapsed presences removed per pool in one sweep. */
  expirePerSweep?: number;
}

interface HeldPool {
  pool: number;
  lock: HeldLock;
  fence: number;
  /** Position in the pool's change log up to which events are applied. */
  cursor: string;
  users: Set<string>;
}

/** Pools whose write-back is encoded before the client is let flush them to Redis. */
const POOLS_PER_FLUSH = 8;

/** Reconciliation compares posts stamped at least this long ago (see reconcile). */
const SETTLED_MS = 1000;

/** How often new posts are read between sweeps. */
const POST_FOLLOW_MS = 100;

/** A lease this close to its end is not written under. */
const LEASE_SAFETY_MS = 200;

/**
 * bubble-core: holds the online users of the pools it owns, keeps their feed counts exact from
 * the change logs, and on every sweep writes back (fenced) and publishes only what changed.
 */
export class CoreNode {
  readonly counter: FeedCounter;
  readonly extras = new ExtrasTracker();
  private readonly options: Required<
    Pick<CoreNodeOptions, 'reconcilePerSweep' | 'maxEventsPerRead' | 'expirePerSweep'>
  > &
    CoreNodeOptions;
  private readonly log: Logger;
  private readonly lookbackMs: number;
  private readonly held = new Map<number, HeldPool>();
  private postCursor = '0-0';
  private sharedCursor = '0-0';
  private sweeping: Promise<void> | null = null;
  /** A tick came while a sweep was running: sweep again as soon as it ends. */
  private sweepFollows = false;
  /** A read of the post log between sweeps (see followPosts), awaited by the next sweep. */
  private following: Promise<void> | null = null;
  private lastTickAt = 0;
  private lastHeartbeatAt = Date.now();
  private startedAt = 0;
  private timers: NodeJS.Timeout[] = [];
  private stopTicks: (() => Promise<void>) | null = null;
  private stopChanges: (() => Promise<void>) | null = null;
  private reconcileQueue: string[] = [];
  /**
   * Users whose badge disagreed with the stored sources, checked again next sweep: what the
   * sources said then (a signature) and how many checks in a row disagreed while they moved.
   */
  private readonly suspects = new Map<string, { truth: string; strikes: number }>();
  /**
   * Each held user's badge state as we last loaded or stored it (version 0: none is; -1:
   * unknown), updated in place by every save. Writes that carry it go in blind: the store
   * checks only users another writer may have changed (see saveBadges-7.lua), so a belief is
   * never set from anything else, and is made unknown when a gateway wrote the user.
   * Indexed by the counter's user id, as is the user's pool: the write-back looks both up for
   * every changed user of every sweep.
   */
  private knownStates: (KnownBadge | undefined)[] = [];
  private poolById = new Int32Array(0);
  /**
   * While users load: those a gateway's write changed meanwhile. Their loaded badge may predate
   * that write, and its message may have come before they were held, so their counts are
   * written again rather than trusted.
   */
  private changedWhileLoading: Set<string> | null = null;
  // The write-back's scratch (see writeChanged), reused from sweep to sweep.
  private writeIds = new Int32Array(0);
  private writeFeeds = new Int32Array(0);
  private writePools = new Int32Array(0);
  private byPool = new Int32Array(0);
  private writeMarks = new Int32Array(0);
  private writeStamp = 0;
  private readonly writeSlots: WriteSlot[] = [];
  private stopped = false;
  private closing: Promise<void> | undefined;
  readonly totals = { sweeps: 0, staleWritesRejected: 0, driftRepaired: 0, skipped: 0 };
  lastReport: SweepReport | null = null;

  constructor(options: CoreNodeOptions) {
    this.options = {
      reconcilePerSweep: 20,
      maxEventsPerRead: 10_000,
      expirePerSweep: 1000,
      ...options,
    };
    this.log = options.logger.child({ module: 'bubble-core', node: options.id });
    this.lookbackMs = options.lookbackDays * DAY_MS;
    this.counter = new FeedCounter({ lookbackMs: this.lookbackMs });
  }

  get ownedPools(): number[] {
    return [...this.held.keys()].sort((a, b) => a - b);
  }

  async start(): Promise<void> {
    const { store, tickMs, leaseMs } = this.options;
    this.startedAt = this.options.clock.now();
    this.postCursor = await store.changes.postLogEnd();
    // The log position first: a notice published while the state loads is applied again.
    this.sharedCursor = await store.changes.sharedLogEnd();
    await this.loadShared();
    await this.heartbeat();
    // Gateways also write badge states (cold starts, reads), from sources a sweep may not have
    // applied yet, so what is stored after such a write is unknown here: the message may even
    // arrive after our own later save of the user went in. The next sweep writes the user's
    // badge again, as a decided write: the store compares it with what is stored (equal counts
    // change nothing, not even the version). Taking the message's counts as stored instead
    // left a badge at our older count when our save landed after the gateway's write and its
    // message after our save.
    const pools = Array.from({ length: store.pools }, (_, pool) => pool);
    this.stopChanges = await store.fencedBadges.subscribe(pools, (_pool, changes) => {
      for (const change of changes) {
        this.changedWhileLoading?.add(change.user);
        if (this.counter.hasUser(change.user)) {
          this.counter.markReported(change.user, -1);
          this.extras.markReported(change.user, null);
          // Decided, not blind: equal counts must keep the version the gateway stored.
          const known = this.knownStates[this.counter.users.idOf(change.user)!];
          if (known) known.version = -1;
        }
      }
    });
    this.stopTicks = await store.coordination.onTick(() => {
      this.lastTickAt = Date.now();
      this.requestSweep();
    });
    const every = (ms: number, fn: () => void) => {
      const timer = setInterval(fn, ms);
      timer.unref();
      this.timers.push(timer);
    };
    // Heartbeats lapse after half a lease, so the leader reassigns a dead core's pools before
    // their locks expire and a survivor takes them within one lease and one sweep.
    every(Math.max(100, Math.floor(leaseMs / 6)), () => {
      this.watchdog();
      void this.heartbeat();
    });
    every(POST_FOLLOW_MS, () => this.followPosts());
    // Ticks come from the leading bubble-server; while none lead, keep sweeping on our own.
    every(tickMs, () => {
      if (Date.now() - this.lastTickAt > 3 * tickMs) this.requestSweep();
    });
    this.log.info({ leaseMs, tickMs }, 'bubble-core started');
  }

  /**
   * Runs a sweep now, or right after the one running: a tick that finds a sweep running is
   * kept, so a change waits for the end of that sweep rather than for the tick after it (a
   * sweep a little longer than the tick would otherwise double the badge latency). Ticks
   * beyond that one are skipped and counted: one sweep reads everything they would have.
   */
  requestSweep(): void {
    if (this.stopped) return;
    if (this.sweeping) {
      if (this.sweepFollows) {
        this.totals.skipped++;
        this.options.metrics?.sweepsSkipped.inc();
      }
      this.sweepFollows = true;
      return;
    }
    this.sweeping = this.sweep()
      .catch((err: unknown) => this.log.error({ err }, 'sweep failed'))
      .finally(() => {
        this.sweeping = null;
        if (this.sweepFollows) {
          this.sweepFollows = false;
          this.requestSweep();
        }
      });
  }

  /** Waits for the sweep in progress, if any, then runs one more. */
  async sweepNow(): Promise<void> {
    while (this.sweeping) await this.sweeping;
    this.requestSweep();
    // requestSweep set this.sweeping (unless stopped); TypeScript still narrows it to null.
    await (this.sweeping as Promise<void> | null);
  }

  async close(): Promise<void> {
    this.closing ??= (async () => {
      this.stopped = true;
      for (const timer of this.timers) clearInterval(timer);
      await this.stopTicks?.();
      await this.stopChanges?.();
      if (this.sweeping) await this.sweeping;
      if (this.following) await this.following;
      await Promise.allSettled(
        [...this.held.keys()].map((pool) => this.dropPool(pool, 'shutdown')),
      );
      // Best effort: a node left in the list expires with its lease.
      await this.options.store.coordination
        .removeNode(this.options.id)
        .catch((err: unknown) => this.log.warn({ err }, 'could not leave the node list'));
      this.log.info('bubble-core stopped');
    })();
    return this.closing;
  }

  private async heartbeat(): Promise<void> {
    const { store, id, leaseMs, url } = this.options;
    try {
      await store.coordination.heartbeat(
        { id, role: 'core', url, startedAt: this.startedAt, seenAt: Date.now() },
        Math.floor(leaseMs / 2),
      );
      this.lastHeartbeatAt = Date.now();
    } catch (err) {
      this.log.warn({ err }, 'heartbeat failed');
    }
  }

  /**
   * Cut off from the store, this core's heartbeats lapse and the leader hands its pools to
   * others; its pool locks may still be extended (they live elsewhere), so give them up.
   */
  private watchdog(): void {
    const silentMs = Date.now() - this.lastHeartbeatAt;
    if (this.held.size === 0 || silentMs <= this.options.leaseMs / 2) return;
    this.log.warn(
      { silentMs },
      'no heartbeat reached the store for half a lease; giving up every pool',
    );
    for (const pool of [...this.held.keys()]) void this.dropPool(pool, 'cut off from the store');
  }

  /**
   * Between sweeps, new posts are read and counted as they come, so that a sweep finds only the
   * last moments' posts to walk and mostly writes. Never while a sweep runs: the sweep's loads
   * rely on no post being counted between a user's follows and their authors' windows.
   */
  private followPosts(): void {
    if (this.stopped || this.sweeping || this.following || this.held.size === 0) return;
    const { store, clock, maxEventsPerRead } = this.options;
    this.following = (async () => {
      const read = await store.changes.readPostEvents(this.postCursor, maxEventsPerRead);
      // A gap is repaired by the next sweep, which reads from the same position.
      if (read.gap) return;
      this.counter.advanceTo(clock.now());
      this.applyPosts(read.entries);
    })()
      .catch((err: unknown) => this.log.warn({ err }, 'reading new posts failed'))
      .finally(() => {
        this.following = null;
      });
  }

  private applyPosts(entries: readonly { id: string; event: PostEvent }[]): void {
    for (const { id, event } of entries) {
      if (event.kind === 'post') this.counter.addPost(event.author, event.id, event.ts);
      else this.counter.deletePost(event.author, event.id, event.ts);
      this.postCursor = id;
    }
  }

  private async sweep(): Promise<void> {
    const started = performance.now();
    const { store, clock, maxEventsPerRead } = this.options;
    let commands = 0;
    if (this.following) await this.following;

    // Users loaded for newly taken pools are counted as of now, not replayed from the past.
    this.counter.advanceTo(clock.now());
    const assignment = await store.coordination.assignment();
    commands += 1 + (await this.followAssignment(assignment));

    const pools = [...this.held.values()];
    const [poolReads, postRead, sharedRead] = await Promise.all([
      store.changes.readPoolEvents(
        pools.map((p) => ({ pool: p.pool, after: p.cursor })),
        maxEventsPerRead,
      ),
      store.changes.readPostEvents(this.postCursor, maxEventsPerRead),
      store.changes.readSharedEvents(this.sharedCursor, maxEventsPerRead),
    ]);
    commands += pools.length + 2;

    const now = clock.now();
    this.counter.advanceTo(now);

    this.applyPosts(postRead.entries);
    for (const { id, event } of sharedRead.entries) {
      this.extras.apply(event);
      this.sharedCursor = id;
    }

    const toLoad = new Set<string>();
    const refollow = new Set<string>();
    const remark = new Set<string>();
    for (const held of pools) {
      const read = poolReads.get(held.pool);
      if (!read) continue;
      if (read.gap) {
        this.log.warn(
          { pool: held.pool },
          'pool change log was trimmed past us; reloading the pool',
        );
        for (const user of await store.presence.members(held.pool, now)) toLoad.add(user);
        commands++;
      }
      for (const { id, event } of read.entries) {
        held.cursor = id;
        switch (event.kind) {
          case 'online':
            held.users.add(event.user);
            toLoad.add(event.user);
            break;
          case 'offline':
            held.users.delete(event.user);
            toLoad.delete(event.user);
            refollow.delete(event.user);
            remark.delete(event.user);
            this.forget(event.user);
            break;
          case 'follows':
            if (held.users.has(event.user) && !toLoad.has(event.user)) refollow.add(event.user);
            break;
          case 'marks':
            if (held.users.has(event.user) && !toLoad.has(event.user)) remark.add(event.user);
            break;
          case 'cursor':
            this.counter.advanceReadAt(event.user, event.readAt);
            break;
        }
      }
    }
    if (postRead.gap) {
      this.log.warn('post change log was trimmed past us; reloading every author window');
      commands += await this.reloadAuthors(this.trackedAuthors());
    }

    if (sharedRead.gap) {
      this.log.warn('shared change log was trimmed past us; reloading notices, red dots, marks');
      await this.loadShared();
      commands += 2;
      for (const user of this.counter.heldUsers()) if (!toLoad.has(user)) remark.add(user);
    }

    commands += await this.loadUsers([...toLoad], [...refollow], [...remark]);
    commands += await this.expirePresence(now);
    const written = await this.writeChanged(now);
    commands += written.commands;
    const durationMs = performance.now() - started;
    // Behind on the logs, every count would look drifted: reconcile only when caught up.
    const behind =
      postRead.entries.length >= maxEventsPerRead ||
      sharedRead.entries.length >= maxEventsPerRead ||
      [...poolReads.values()].some((read) => read.entries.length >= maxEventsPerRead);
    const reconcileStarted = performance.now();
    if (!behind) commands += await this.reconcile(now);
    const reconcileMs = performance.now() - reconcileStarted;

    this.totals.sweeps++;
    const report: SweepReport = {
      node: this.options.id,
      at: now,
      pools: this.held.size,
      users: this.counter.userCount,
      changed: written.changed,
      durationMs: Math.round(durationMs * 100) / 100,
      reconcileMs: Math.round(reconcileMs * 100) / 100,
      redisCommands: store.engine === 'redis' ? commands : 0,
      staleWritesRejected: this.totals.staleWritesRejected,
      driftRepaired: this.totals.driftRepaired,
    };
    this.lastReport = report;
    const metrics = this.options.metrics;
    metrics?.sweepSeconds.observe(durationMs / 1000);
    metrics?.usersHeld.set(this.counter.userCount);
    metrics?.poolsOwned.set(this.held.size);
    // The report only feeds the cluster status; the next sweep sends a fresh one.
    await store.coordination
      .reportSweep(report)
      .catch((err: unknown) => this.log.warn({ err }, 'could not report the sweep'));
  }

  /** Takes the pools assigned to us that we do not hold, gives up the others. */
  private async followAssignment(assignment: Assignment | null): Promise<number> {
    const { id, store, locks, leaseMs, clock } = this.options;
    const mine = new Set<number>();
    assignment?.owners.forEach((owner, pool) => {
      if (owner === id) mine.add(pool);
    });
    let commands = 0;
    for (const [pool, held] of [...this.held]) {
      if (!mine.has(pool)) await this.dropPool(pool, 'reassigned');
      // Dropped here and taken again below, under a new lock and a new fencing token.
      else if (held.lock.signal.aborted) await this.dropPool(pool, 'lease lost');
    }
    const wanted = [...mine].filter((pool) => !this.held.has(pool));
    const joined: HeldPool[] = [];
    await Promise.all(
      wanted.map(async (pool) => {
        const lock = await locks.tryAcquire(pool, leaseMs);
        if (!lock) return;
        try {
          const fence = await store.coordination.nextFence(pool);
          const cursor = await store.changes.poolLogEnd(pool);
          const members = await store.presence.members(pool, clock.now());
          commands += 3;
          const held: HeldPool = { pool, lock, fence, cursor, users: new Set(members) };
          lock.signal.addEventListener('abort', () => {
            if (this.held.get(pool) === held) this.log.warn({ pool }, 'pool lease lost');
          });
          this.held.set(pool, held);
          joined.push(held);
        } catch (err) {
          await lock.release();
          throw err;
        }
      }),
    );
    if (joined.length > 0) {
      this.log.info(
        { pools: joined.map((p) => p.pool), fences: joined.map((p) => p.fence) },
        'pools taken',
      );
      commands += await this.loadUsers(
        joined.flatMap((p) => [...p.users]),
        [],
        [],
      );
    }
    return commands;
  }

  private async dropPool(pool: number, reason: string): Promise<void> {
    const held = this.held.get(pool);
    if (!held) return;
    this.held.delete(pool);
    for (const user of held.users) this.forget(user);
    await held.lock.release();
    this.log.info({ pool, reason }, 'pool dropped');
  }

  /**
   * Brings users into memory (or refreshes their follows, or their marks and conversations):
   * their follows and cursor, the windows of authors nobody held followed yet, their marks and
   * conversations, and the badge they last had stored. One batch each.
   */
  private async loadUsers(users: string[], refollow: string[], remark: string[]): Promise<number> {
    if (users.length === 0 && refollow.length === 0 && remark.length === 0) return 0;
    const marksOf = [...users, ...remark];
    const changedMeanwhile = (this.changedWhileLoading = new Set());
    try {
      return await this.loadUsersNow(users, refollow, remark, marksOf, changedMeanwhile);
    } finally {
      this.changedWhileLoading = null;
    }
  }

  private async loadUsersNow(
    users: string[],
    refollow: string[],
    remark: string[],
    marksOf: string[],
    changedMeanwhile: ReadonlySet<string>,
  ): Promise<number> {
    const { store } = this.options;
    const [inputs, stored, follows, marks, memberships] = await Promise.all([
      Promise.all(users.map((user) => store.feedInputs(user))),
      Promise.all(users.map((user) => store.badges.load(user))),
      Promise.all(refollow.map((user) => store.follows.list(user))),
      Promise.all(marksOf.map((user) => store.marks.state(user))),
      Promise.all(marksOf.map((user) => store.conversations.memberships(user))),
    ]);
    const authors = new Set<string>();
    users.forEach((user, i) => {
      const { follows: f, readAt } = inputs[i]!;
      for (const author of this.counter.setUser(user, f, readAt)) authors.add(author);
    });
    refollow.forEach((user, i) => {
      for (const author of this.counter.setFollows(user, follows[i]!)) authors.add(author);
    });
    marksOf.forEach((user, i) => this.extras.setUser(user, marks[i]!, memberships[i]!));
    const windows = await store.posts.window([...authors], this.counter.time - this.lookbackMs);
    for (const [author, posts] of windows) this.counter.loadAuthor(author, posts);
    for (const user of users) this.counter.recompute(user);
    for (const user of refollow) this.counter.recompute(user);
    users.forEach((user, i) => {
      // Dropped while loading (the watchdog gives pools up on a timer, sweeps or not).
      const id = this.counter.users.idOf(user);
      if (id === undefined) return;
      const badge = stored[i];
      this.poolById = growInt32(this.poolById, id + 1);
      this.poolById[id] = poolOf(user, store.pools);
      if (changedMeanwhile.has(user)) {
        // A gateway wrote the user meanwhile: what is stored is unknown here, so the next write
        // is made (reported -1) and decided by the store (version -1).
        this.counter.markReported(user, -1);
        this.extras.markReported(user, null);
        this.knownStates[id] = { epoch: '', version: -1 };
      } else if (!badge) {
        // Nothing stored: written next sweep, as the first version of a fresh epoch.
        this.counter.markReported(user, -1);
        this.extras.markReported(user, null);
        this.knownStates[id] = { epoch: '', version: 0 };
      } else {
        this.counter.markReported(user, badge.fields[FEED_FIELD] ?? 0);
        this.extras.markReported(user, extraFieldsOf(badge.fields));
        this.knownStates[id] = { epoch: badge.epoch, version: badge.version };
      }
    });
    return users.length * 3 + refollow.length + marksOf.length * 2 + authors.size;
  }

  /** Notices and red dots, which every held user is counted against. */
  private async loadShared(): Promise<void> {
    const { store } = this.options;
    const [liveIds, marked] = await Promise.all([store.notices.liveIds(), store.reddots.all()]);
    this.extras.setShared(liveIds, marked);
  }

  private forget(user: string): void {
    const id = this.counter.users.idOf(user);
    if (id !== undefined) this.knownStates[id] = undefined;
    this.counter.removeUser(user);
    this.extras.removeUser(user);
  }

  private async expirePresence(now: number): Promise<number> {
    const { store, expirePerSweep } = this.options;
    const pools = [...this.held.values()];
    const expired = await Promise.all(
      pools.map((p) => store.presence.expire(p.pool, now, expirePerSweep)),
    );
    // The offline events these record come back through the log; removing now saves a sweep.
    pools.forEach((held, i) => {
      for (const user of expired[i]!) {
        held.users.delete(user);
        this.forget(user);
      }
    });
    return pools.length;
  }

  /** Fenced, batched write-back of the changed badges: one call per pool with changes. */
  private async writeChanged(now: number): Promise<{ changed: number; commands: number }> {
    const { store, metrics } = this.options;
    const pools = store.pools;
    const { ids, counts } = this.counter.takeChanged();
    // Counter ids and feeds of the changed users, then grouped by pool (a counting sort) in
    // typed arrays kept from sweep to sweep: a sweep's grouping makes no garbage that lives
    // across collections. Each pool's writes are made only when it is sent.
    const extrasOnly = this.extras.takeChanged();
    this.ensureWriteScratch(ids.length + extrasOnly.length, this.counter.users.capacity);
    const { writeIds, writeFeeds, writePools, byPool, writeMarks } = this;
    let total = 0;
    if (++this.writeStamp === 0x7fffffff) {
      writeMarks.fill(0);
      this.writeStamp = 1;
    }
    const mark = this.writeStamp;
    for (let i = 0; i < ids.length; i++) {
      writeIds[total] = ids[i]!;
      writeFeeds[total++] = counts[i]!;
      writeMarks[ids[i]!] = mark;
    }
    for (const user of extrasOnly) {
      const id = this.counter.users.idOf(user);
      if (id === undefined || writeMarks[id] === mark) continue;
      writeIds[total] = id;
      writeFeeds[total++] = this.counter.countOf(user) ?? 0;
    }
    const poolStart = new Int32Array(pools + 1);
    for (let i = 0; i < total; i++) {
      const pool = this.poolById[writeIds[i]!]!;
      writePools[i] = pool;
      poolStart[pool + 1]!++;
    }
    for (let p = 0; p < pools; p++) poolStart[p + 1]! += poolStart[p]!;
    const fill = poolStart.slice(0, pools);
    for (let i = 0; i < total; i++) byPool[fill[writePools[i]!]!++] = i;

    // The store has read a batch's writes when saveFenced returns, so the write objects (and
    // their feed-only fields) are reused from pool to pool and sweep to sweep.
    const writesOf = (from: number, to: number) => {
      const slots = this.writeSlots;
      while (slots.length < to - from) slots.push(new WriteSlot());
      const writes: FencedBadgeWrite[] = new Array(to - from);
      // Skips a lookup per user where nobody has notices, red dots or conversations.
      const extras = this.extras.noneHeld ? null : this.extras;
      for (let k = from; k < to; k++) {
        const i = byPool[k]!;
        const slot = slots[k - from]!;
        const user = this.counter.nameAt(writeIds[i]!);
        slot.user = user;
        slot.known = this.knownStates[writeIds[i]!];
        slot.feedOnly[FEED_FIELD] = writeFeeds[i]!;
        slot.fields = slot.feedOnly;
        if (extras) {
          const fields: Record<string, number> = { ...slot.feedOnly };
          extras.addFieldsOf(user, fields);
          slot.fields = fields;
        }
        writes[k - from] = slot;
      }
      return writes;
    };
    let changed = 0;
    const savePool = async (pool: number, from: number, to: number) => {
      const held = this.held.get(pool);
      if (!held) return;
      if (held.lock.signal.aborted || held.lock.validUntil() < Date.now() + LEASE_SAFETY_MS) {
        await this.dropPool(pool, 'lease lost or ending');
        return;
      }
      try {
        const result = await store.fencedBadges.saveFenced(
          pool,
          held.fence,
          writesOf(from, to),
          now,
          { seenLog: held.cursor },
        );
        if (!result.accepted) {
          this.totals.staleWritesRejected++;
          metrics?.staleWritesRejected.inc();
          await this.dropPool(pool, 'fencing token is stale');
          return;
        }
        changed += result.changed;
        metrics?.badgesWritten.inc(result.changed);
      } catch (err) {
        // Hand the counts out again next sweep; whether this batch went in is unknown.
        for (let k = from; k < to; k++) {
          const id = writeIds[byPool[k]!]!;
          const user = this.counter.nameAt(id);
          this.counter.markReported(user, -1);
          this.extras.markReported(user, null);
          const known = this.knownStates[id];
          if (known) known.version = -1;
        }
        throw err;
      }
    };
    // Each pool's batch goes out as soon as it is encoded (a yield lets the client flush it),
    // so Redis stores the first pools while the core encodes the next ones.
    const saves: Promise<void>[] = [];
    let failure: unknown;
    let sent = 0;
    for (let pool = 0; pool < pools; pool++) {
      const from = poolStart[pool]!;
      const to = poolStart[pool + 1]!;
      if (from === to) continue;
      saves.push(
        savePool(pool, from, to).catch((err: unknown) => {
          failure ??= err;
        }),
      );
      if (++sent % POOLS_PER_FLUSH === 0)
        await new Promise<void>((resolve) => setImmediate(resolve));
    }
    await Promise.all(saves);
    if (failure !== undefined) throw failure;
    return { changed, commands: sent };
  }

  /** Grows the write-back's scratch arrays to `n` writes of users with ids below `capacity`. */
  private ensureWriteScratch(n: number, capacity: number): void {
    if (this.writeIds.length < n) {
      const size = Math.max(n, 2 * this.writeIds.length);
      this.writeIds = new Int32Array(size);
      this.writeFeeds = new Int32Array(size);
      this.writePools = new Int32Array(size);
      this.byPool = new Int32Array(size);
    }
    if (this.writeMarks.length < capacity) {
      const marks = new Int32Array(Math.max(capacity, 2 * this.writeMarks.length));
      marks.set(this.writeMarks);
      this.writeMarks = marks;
    }
  }

  /**
   * Recomputes a few held users per sweep from the stored sources. Where a count disagrees, the
   * user's inputs and the windows of the authors that disagree are reloaded; every badge that
   * changes through this is drift repaired.
   */
  private async reconcile(now: number): Promise<number> {
    const { store, reconcilePerSweep } = this.options;
    if (reconcilePerSweep <= 0 || this.counter.userCount === 0) return 0;
    if (this.reconcileQueue.length === 0) this.reconcileQueue = this.counter.heldUsers();
    const suspects = [...this.suspects.keys()];
    const batch = [...suspects, ...this.reconcileQueue.splice(0, reconcilePerSweep)].filter((u) =>
      this.counter.hasUser(u),
    );
    const marked = await store.reddots.all();
    let commands = 1;
    // The stored sources of the whole batch at once: one round trip per step, not per user.
    const checks = await Promise.all(
      batch.map(async (user) => {
        const [{ follows, readAt }, extras] = await Promise.all([
          store.feedInputs(user),
          this.storedExtras(user, marked),
        ]);
        // Posts are compared up to a second ago: a post stamped just before `now` may be stored
        // and not yet in the change log we read; it is not drift.
        const after = Math.max(readAt ?? -Infinity, now - this.lookbackMs);
        const truth = await store.posts.countBetween(follows, after, now - SETTLED_MS);
        return { user, follows, readAt, extras, truth, after };
      }),
    );
    for (const { user, follows, readAt, extras, truth, after } of checks) {
      commands += 5 + follows.length + extras.commands;
      // The windows against the stored posts, and the incremental count against the windows.
      const feedAgrees =
        truth === this.counter.windowCount(user, after, now - SETTLED_MS) &&
        this.counter.countOf(user) === this.counter.windowCount(user, after, now) &&
        sameFollows(follows, this.counter.followsOf(user)) &&
        (readAt ?? null) === this.counter.readAtOf(user);
      const extrasAgree = extras.key === this.extras.heldKey(user);
      if (feedAgrees && extrasAgree) {
        this.suspects.delete(user);
        continue;
      }
      // A change may be stored but not yet read from the log: look again after the next sweep.
      // Drift is a disagreement that outlives a sweep while the sources stand still. Sources
      // that keep moving are a race: after a few checks the user goes back to the round robin.
      const signature = `${truth}#${extras.key}`;
      const suspect = this.suspects.get(user);
      if (suspect?.truth !== signature) {
        const strikes = (suspect?.strikes ?? 0) + 1;
        if (strikes > 3) this.suspects.delete(user);
        else this.suspects.set(user, { truth: signature, strikes });
        continue;
      }
      this.suspects.delete(user);
      const before = this.counter.countOf(user);
      const extrasBefore = this.extras.heldKey(user);
      let repairedPosts = 0;
      if (!feedAgrees) {
        this.counter.setUser(user, follows, readAt);
        const windows = await store.posts.window(follows, now - this.lookbackMs);
        commands += follows.length;
        for (const [author, posts] of windows) {
          if (!this.counter.isAuthorLoaded(author)) this.counter.loadAuthor(author, posts);
          else repairedPosts += this.counter.reloadAuthor(author, posts);
        }
        this.counter.recompute(user);
      }
      if (!extrasAgree) {
        await this.loadShared();
        commands += 2;
        this.extras.setUser(user, extras.marks, extras.memberships);
      }
      const repaired = this.counter.countOf(user);
      const extrasAfter = this.extras.heldKey(user);
      if (repaired === before && extrasAfter === extrasBefore) {
        // The stored sources moved on between our sweep and this read: not drift.
        this.log.debug({ user, count: before, truth }, 'reconciliation raced a change');
        continue;
      }
      this.totals.driftRepaired++;
      this.options.metrics?.driftRepaired.inc();
      this.log.warn(
        {
          user,
          before,
          after: repaired,
          truth,
          repairedPosts,
          extrasBefore,
          extrasAfter,
        },
        'reconciliation repaired a drifted badge',
      );
    }
    return commands;
  }

  /** A user's notices, conversations (maxSeq − readSeq) and red dots from the stored sources. */
  /** The stored extras of a user, with the comparison key of their badge fields. */
  private async storedExtras(user: string, marked: Record<string, number>) {
    const stored = await readStoredExtras(this.options.store, user, marked);
    const fields: Record<string, number> = {};
    addExtraFields(fields, stored.extras);
    return { ...stored, key: fieldsKey(fields), commands: 3 + stored.memberships.length * 2 };
  }

  private trackedAuthors(): string[] {
    const authors = new Set<string>();
    for (const held of this.held.values()) {
      for (const user of held.users) for (const a of this.counter.followsOf(user)) authors.add(a);
    }
    return [...authors];
  }

  private async reloadAuthors(authors: string[]): Promise<number> {
    const windows = await this.options.store.posts.window(
      authors,
      this.counter.time - this.lookbackMs,
    );
    for (const [author, posts] of windows) this.counter.reloadAuthor(author, posts);
    return authors.length;
  }
}

/** A write of the write-back, reused (see writeChanged). A zero feed is stored as absent. */
class WriteSlot implements FencedBadgeWrite {
  user = '';
  known: KnownBadge | undefined = undefined;
  readonly feedOnly: Record<typeof FEED_FIELD, number> = { [FEED_FIELD]: 0 };
  fields: Readonly<Record<string, number>> = this.feedOnly;
}

function sameFollows(stored: readonly string[], held: readonly string[]): boolean {
  if (stored.length !== held.length) return false;
  const set = new Set(held);
  return stored.every((author) => set.has(author));
}
