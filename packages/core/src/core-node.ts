import { DEFAULT_RULES, DEFAULT_SOURCES_TIMEOUT_MS, type CounterScope } from '@bubble/badges';
import { DAY_MS, type Clock, type SourcesFetcher, type SweepReport } from '@bubble/protocol';
import type { BubbleStore, PoolLocks } from '@bubble/store';
import type { Logger } from 'pino';
import { BadgeWriteBack } from './badge-write-back.js';
import type { CoreMetrics } from './core-metrics.js';
import { ExtrasTracker } from './extras-tracker.js';
import { FeedCounter } from './feed-counter.js';
import { LogFollower } from './log-follower.js';
import { PoolTenures } from './pool-tenures.js';
import { Reconciler } from './reconciler.js';
import { SourcesRefill } from './sources-refill.js';
import { StoredBeliefs } from './stored-beliefs.js';
import { UserLoader } from './user-loader.js';

export interface CoreNodeOptions {
  id: string;
  store: BubbleStore;
  locks: PoolLocks;
  clock: Clock;
  logger: Logger;
  metrics?: CoreMetrics;
  lookbackDays: number;
  /** The interaction counters a badge counts; default DEFAULT_RULES' kinds and inactive days. */
  counters?: { kinds: readonly string[]; inactiveDays: number };
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
  /** The platform's sources endpoint (BUBBLE_SOURCES_URL), for users whose sources are not held. */
  sources?: SourcesFetcher;
  /** BUBBLE_SOURCES_TIMEOUT_MS. */
  sourcesTimeoutMs?: number;
  /** BUBBLE_FOLLOW_CAP and BUBBLE_TOPIC_CAP, applied to what the endpoint answers. */
  caps?: { follows: number; topics: number };
}

/** How often new posts are read between sweeps. */
const POST_FOLLOW_MS = 100;

/**
 * bubble-core: holds the online users of the pools it owns, keeps their feed counts exact from
 * the change logs, and on every sweep writes back (fenced) and publishes only what changed.
 * This class runs the lifecycle, the timers and the order of a sweep's steps; each step is a
 * module of its own (pool-tenures, log-follower, user-loader, badge-write-back, reconciler),
 * and what the core believes is stored for its users is kept in stored-beliefs.
 */
export class CoreNode {
  readonly counter: FeedCounter;
  readonly extras = new ExtrasTracker();
  readonly totals = { sweeps: 0, staleWritesRejected: 0, driftRepaired: 0, skipped: 0 };
  lastReport: SweepReport | null = null;
  private readonly options: CoreNodeOptions;
  private readonly log: Logger;
  private readonly beliefs: StoredBeliefs;
  private readonly tenures: PoolTenures;
  private readonly logs: LogFollower;
  private readonly loader: UserLoader;
  private readonly writeBack: BadgeWriteBack;
  private readonly reconciler: Reconciler;
  private readonly refill: SourcesRefill;
  private sweeping: Promise<void> | null = null;
  /** A tick came while a sweep was running: sweep again as soon as it ends. */
  private sweepFollows = false;
  /** A tick (or sweepNow) asked for a sweep since the last one started. */
  private ticked = false;
  /** The sweep that just ended left installed users waiting: the next one follows at once. */
  private refillFollows = false;
  private lastTickAt = 0;
  private lastHeartbeatAt = Date.now();
  private startedAt = 0;
  private timers: NodeJS.Timeout[] = [];
  private stopTicks: (() => Promise<void>) | null = null;
  private stopChanges: (() => Promise<void>) | null = null;
  private stopped = false;
  private closing: Promise<void> | undefined;

  constructor(options: CoreNodeOptions) {
    this.options = options;
    const { store, clock, metrics } = options;
    this.log = options.logger.child({ module: 'bubble-core', node: options.id });
    const lookbackMs = options.lookbackDays * DAY_MS;
    const counterScope: CounterScope = {
      kinds: options.counters?.kinds ?? DEFAULT_RULES.counterKinds,
      windowMs: (options.counters?.inactiveDays ?? DEFAULT_RULES.inactiveDays) * DAY_MS,
    };
    const counter = (this.counter = new FeedCounter({ lookbackMs }));
    const extras = this.extras;
    const log = this.log;
    const beliefs = (this.beliefs = new StoredBeliefs(counter, extras, store.pools));
    const release = (user: string) => beliefs.release(user);
    const tenures = (this.tenures = new PoolTenures({
      id: options.id,
      store,
      locks: options.locks,
      log,
      leaseMs: options.leaseMs,
      expirePerSweep: options.expirePerSweep ?? 1000,
      release,
    }));
    this.logs = new LogFollower({
      store,
      clock,
      log,
      counter,
      extras,
      lookbackMs,
      maxEventsPerRead: options.maxEventsPerRead ?? 10_000,
      release,
    });
    const refill = (this.refill = new SourcesRefill({
      store,
      fetcher: options.sources,
      caps: options.caps ?? {
        follows: DEFAULT_RULES.followCap,
        topics: DEFAULT_RULES.topicCap,
      },
      timeoutMs: options.sourcesTimeoutMs ?? DEFAULT_SOURCES_TIMEOUT_MS,
      holds: (user) => counter.hasUser(user),
      log,
    }));
    this.loader = new UserLoader({
      store,
      counter,
      extras,
      beliefs,
      lookbackMs,
      counterScope,
      refill,
      holdsUser: (user) => tenures.holdsUser(user),
    });
    const totals = this.totals;
    this.writeBack = new BadgeWriteBack({
      store,
      counter,
      extras,
      beliefs,
      tenures,
      metrics,
      totals,
    });
    this.reconciler = new Reconciler({
      store,
      counter,
      extras,
      log,
      metrics,
      totals,
      lookbackMs,
      counterScope,
      perSweep: options.reconcilePerSweep ?? 20,
      loadShared: () => this.logs.loadShared(),
      refill,
    });
  }

  get ownedPools(): number[] {
    return this.tenures.pools;
  }

  async start(): Promise<void> {
    const { store, tickMs, leaseMs } = this.options;
    this.startedAt = this.options.clock.now();
    await this.logs.start();
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
        this.loader.gatewayWrote(change.user);
        const id = this.counter.users.idOf(change.user);
        if (id !== undefined) this.beliefs.forgetStored(id, change.user);
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
    this.ticked = true;
    if (this.sweeping) {
      if (this.sweepFollows) {
        this.totals.skipped++;
        this.options.metrics?.sweepsSkipped.inc();
      }
      this.sweepFollows = true;
      return;
    }
    this.startSweep();
  }

  private startSweep(): void {
    this.sweeping = this.sweep()
      .catch((err: unknown) => this.log.error({ err }, 'sweep failed'))
      .finally(() => {
        this.sweeping = null;
        if (this.stopped) return;
        if (this.sweepFollows) {
          this.sweepFollows = false;
          this.requestSweep();
        } else if (this.refillFollows) {
          // A refill hands each sweep a bounded share of the installed users: the next share
          // now rather than at the next tick (without a reconciliation of its own). Only after
          // a sweep that succeeded: failing ones wait for the tick, not spin.
          this.refillFollows = false;
          this.startSweep();
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
      this.refill.close();
      for (const timer of this.timers) clearInterval(timer);
      await this.stopTicks?.();
      await this.stopChanges?.();
      if (this.sweeping) await this.sweeping;
      const reading = this.logs.reading;
      if (reading) await reading;
      await this.tenures.dropAll('shutdown');
      // Best effort: a node left in the list expires with its lease.
      await this.options.store.coordination
        .removeNode(this.options.id)
        .catch((err: unknown) => this.log.warn({ err }, 'could not leave the node list'));
      await this.handOver().catch((err: unknown) =>
        this.log.warn({ err }, 'could not hand the pools over; the leader will'),
      );
      this.log.info('bubble-core stopped');
    })();
    return this.closing;
  }

  /**
   * On a graceful stop, gives the pools assigned to us to the live cores holding fewest, as the
   * leader would a round later (counts end within one of each other, so its next round keeps
   * them), and ticks so they take them at once: re-owned within a sweep instead of a leader
   * round (a sixth of the lease) and a tick. Our locks are released already.
   */
  private async handOver(): Promise<void> {
    const { store, id } = this.options;
    const [current, nodes] = await Promise.all([
      store.coordination.assignment(),
      store.coordination.liveNodes(),
    ]);
    const others = nodes.filter((n) => n.role === 'core' && n.id !== id).map((n) => n.id);
    if (!current || others.length === 0) return;
    const owners = [...current.owners];
    const load = new Map(others.map((core) => [core, owners.filter((o) => o === core).length]));
    let moved = 0;
    owners.forEach((owner, pool) => {
      if (owner !== id) return;
      let least = others[0]!;
      for (const core of others) if (load.get(core)! < load.get(least)!) least = core;
      owners[pool] = least;
      load.set(least, load.get(least)! + 1);
      moved++;
    });
    if (moved === 0) return;
    await store.coordination.setAssignment({ generation: current.generation + 1, owners });
    await store.coordination.publishTick(0);
    this.log.info({ pools: moved, to: others }, 'pools handed over');
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
    if (this.tenures.size === 0 || silentMs <= this.options.leaseMs / 2) return;
    this.log.warn(
      { silentMs },
      'no heartbeat reached the store for half a lease; giving up every pool',
    );
    void this.tenures.dropAll('cut off from the store');
  }

  /** Never while a sweep runs: the sweep's loads rely on no post being counted meanwhile. */
  private followPosts(): void {
    if (this.stopped || this.sweeping || this.tenures.size === 0) return;
    this.logs.followPosts();
  }

  /**
   * One sweep: the assignment (pools taken and given up), the logs of the pools held, the post
   * and shared logs, loads of the users who came online, presence expiry, the write-back, then
   * a bounded reconciliation (smaller while behind on the logs), and the sweep's report.
   */
  private async sweep(): Promise<void> {
    const started = performance.now();
    const { store, clock } = this.options;
    const reading = this.logs.reading;
    if (reading) await reading;
    const commandsBefore = store.commandsSent();
    // The reconciliation's rate is per tick: a sweep the refill started goes without.
    const ticked = this.ticked;
    this.ticked = false;

    // Users loaded for newly taken pools are counted as of now, not replayed from the past.
    this.counter.advanceTo(clock.now());
    const joined = await this.tenures.follow(await store.coordination.assignment());
    const joinedUsers = joined.flatMap((p) => [...p.users]);
    await this.loader.load({ users: joinedUsers });

    const read = await this.logs.catchUp(this.tenures.all());
    const now = read.now;
    // Users whose sources the platform's endpoint answered since the last sweep take what the
    // install left: follows, and the cursor (and marks) the answer may have set where none were.
    await this.loader.load({
      users: [...read.toLoad],
      refollow: [...read.refollow],
      remark: [...read.remark],
      recount: [...read.recount],
      installed: this.refill.takeInstalled(),
    });
    await this.tenures.expirePresence();
    const changed = await this.writeBack.write(now);
    const durationMs = performance.now() - started;
    // Behind on the logs, many counts look drifted for a sweep or two: a smaller batch then.
    const reconcileStarted = performance.now();
    if (ticked) await this.reconcile(now, read.behind);
    const reconcileMs = performance.now() - reconcileStarted;
    // After the badges are written: the users let go this sweep leave the follower lists.
    if (this.counter.unreclaimedFollows > 0) this.counter.reclaim();

    this.totals.sweeps++;
    const report: SweepReport = {
      node: this.options.id,
      at: now,
      pools: this.tenures.size,
      users: this.counter.userCount,
      changed,
      durationMs: Math.round(durationMs * 100) / 100,
      reconcileMs: Math.round(reconcileMs * 100) / 100,
      redisCommands: store.commandsSent() - commandsBefore,
      staleWritesRejected: this.totals.staleWritesRejected,
      driftRepaired: this.totals.driftRepaired,
      sourcesWaiting: this.refill.waitingCount,
    };
    this.lastReport = report;
    this.refillFollows = this.refill.installedCount > 0;
    const metrics = this.options.metrics;
    metrics?.sweepSeconds.observe(durationMs / 1000);
    metrics?.usersHeld.set(this.counter.userCount);
    metrics?.sourcesWaiting.set(this.refill.waitingCount);
    metrics?.poolsOwned.set(this.tenures.size);
    // The report only feeds the cluster status; the next sweep sends a fresh one.
    await store.coordination
      .reportSweep(report)
      .catch((err: unknown) => this.log.warn({ err }, 'could not report the sweep'));
  }

  /** A method of its own: the sweep bench's diagnostic (bench/src/sweep-probe.ts) replaces it. */
  private reconcile(now: number, behind: boolean): Promise<void> {
    return this.reconciler.reconcile(now, behind);
  }
}
