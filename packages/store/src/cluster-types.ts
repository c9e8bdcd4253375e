import type { BadgeChange, BadgeChangeReader, NodeInfo, SweepReport } from '@bubble/protocol';
import type { SharedEvent } from './extras-types.js';

/**
 * What the cluster roles (bubble-server, bubble-core, gateways) share through the store:
 * presence, the change logs cores follow, coordination of leaders and pool owners, and
 * fenced badge writes. Memory and Redis implementations side by side, one contract suite.
 */

/** Changes a core applies to the users of one pool, in log order. */
export type PoolEvent =
  | { kind: 'online'; user: string }
  | { kind: 'offline'; user: string }
  /** The user's follow set changed: reload it. */
  | { kind: 'follows'; user: string }
  /** The user's feed read cursor moved to `readAt`. */
  | { kind: 'cursor'; user: string; readAt: number }
  /** The user's notice cursor, red-dot clicks or conversations changed: reload them (and the counters). */
  | { kind: 'marks'; user: string }
  /** The user's interaction counters changed (an event, a retraction, a read): reload them. */
  | { kind: 'counters'; user: string };

/** Changes to the post index, in log order; every core follows all of them. */
export type PostEvent =
  | { kind: 'post'; author: string; id: string; ts: number; topics?: string[] }
  | { kind: 'delete'; author: string; id: string; ts: number };

export interface LogEntry<E> {
  /** Position in the log, "<ms>-<seq>" as Redis stream ids, ordered. */
  id: string;
  event: E;
}

export interface LogRead<E> {
  entries: LogEntry<E>[];
  /**
   * True when entries after `after` were trimmed before they could be read, or when `after`
   * (past LOG_START) is not a position of this log: the log was lost, or lost its tail, and
   * was recreated (a Redis restarted empty or from an AOF missing its last second). Either
   * way the reader missed changes and must reload what it holds from the stored sources.
   */
  gap: boolean;
}

/** The position before any entry. */
export const LOG_START = '0-0';

export interface ChangeLog {
  appendPoolEvents(pool: number, events: readonly PoolEvent[]): Promise<void>;
  /** One batch for many pools: one read per pool, issued together. */
  readPoolEvents(
    cursors: ReadonlyArray<{ pool: number; after: string }>,
    limit: number,
  ): Promise<Map<number, LogRead<PoolEvent>>>;
  /** Position of the newest pool entry (LOG_START when empty): where a new owner starts. */
  poolLogEnd(pool: number): Promise<string>;

  appendPostEvents(events: readonly PostEvent[]): Promise<void>;
  readPostEvents(after: string, limit: number): Promise<LogRead<PostEvent>>;
  postLogEnd(): Promise<string>;

  /** Notices, red dots and conversation messages: every core follows them too. */
  appendSharedEvents(events: readonly SharedEvent[]): Promise<void>;
  readSharedEvents(after: string, limit: number): Promise<LogRead<SharedEvent>>;
  sharedLogEnd(): Promise<string>;
}

export interface PresenceChange {
  user: string;
  /** The user was offline (or lapsed) before this call made them online, or vice versa. */
  changed: boolean;
}

/**
 * Who is online. Every time here is the store's own (BubbleStore.clock; Redis TIME in the
 * scripts): a gateway sets a TTL, never an expiry, so the clocks of the hosts that set presence
 * and of those that expire it never meet.
 */
export interface PresenceStore {
  /**
   * Online for `ttlMs` from the store's now (renewing extends it; a later expiry is kept).
   * Records an `online` pool event for each user who was not online before. Returns one entry
   * per user, in input order.
   */
  setOnline(users: ReadonlyArray<{ user: string; ttlMs: number }>): Promise<PresenceChange[]>;
  /** Offline now; records an `offline` pool event when the user was online. */
  setOffline(user: string): Promise<boolean>;
  isOnline(user: string): Promise<boolean>;
  /**
   * Removes up to `limit` users of `pool` whose presence lapsed at or before the store's now,
   * recording an `offline` event for each, and returns them.
   */
  expire(pool: number, limit: number): Promise<string[]>;
  /** Users of `pool` online now. */
  members(pool: number): Promise<string[]>;
  /** Online users per pool now (index = pool). */
  poolSizes(): Promise<number[]>;
}

export interface Assignment {
  /** Increases with every change of owners. */
  generation: number;
  /** owners[pool] = node id, or null while unassigned. */
  owners: (string | null)[];
}

export interface Coordination {
  /** Takes the leader lease if free or already ours, and extends it; true while we lead. */
  tryLead(node: string, ttlMs: number): Promise<boolean>;
  /** Gives the lease up if we hold it. */
  resign(node: string): Promise<void>;
  leader(): Promise<string | null>;

  /** Announces a node; it counts as live for `ttlMs` from the store's now. */
  heartbeat(node: NodeInfo, ttlMs: number): Promise<void>;
  /** Forgets a node at once (clean shutdown). */
  removeNode(node: string): Promise<void>;
  /** The nodes live at the store's now (forgetting the lapsed ones). */
  liveNodes(): Promise<NodeInfo[]>;

  /** Written only by the leader. */
  setAssignment(assignment: Assignment): Promise<void>;
  assignment(): Promise<Assignment | null>;

  /**
   * The pool's next fencing token: larger than every token issued for the pool before, also
   * after the store lost data (Redis: nextFence-2.lua). Only the latest is accepted by saveFenced.
   */
  nextFence(pool: number): Promise<number>;
  currentFence(pool: number): Promise<number>;

  /** Sweep triggers from the leader; handlers run for every tick published after subscribing. */
  publishTick(seq: number): Promise<void>;
  onTick(handler: (seq: number) => void): Promise<() => Promise<void>>;

  reportSweep(report: SweepReport): Promise<void>;
  /** The latest report of each node. */
  sweepReports(): Promise<SweepReport[]>;
}

export interface FencedBadgeWrite {
  user: string;
  fields: Readonly<Record<string, number>>;
  /**
   * The state the writer believes is stored: the one it last stored or loaded for the user
   * (version 0: nothing was stored), or absent (or version -1) when it does not know. An
   * accepted save updates it in place to the state stored now, so a writer keeps one per user
   * across saves. A known state saves the engine a comparison. Writes of other writers in
   * between (a gateway's cold start or read) are the engine's to notice: it then decides from
   * the stored state. A belief the writer did not get from a load or a save is not allowed.
   */
  known?: KnownBadge;
  /**
   * This write's own time, in place of the batch's: the counters' watermark of a user whose
   * interaction counters were counted then (CounterCounts.asOf), so a read up to the badge's
   * computedAt clears what it counted and nothing it missed.
   */
  computedAt?: number;
}

/**
 * A writer's belief of a user's stored badge state: its epoch and version (0: none stored;
 * -1: unknown, as after a save whose outcome was lost).
 */
export interface KnownBadge {
  epoch: string;
  version: number;
}

export interface FencedSaveResult {
  /** False when `fence` is not the pool's current token (or it has none): nothing was written. */
  accepted: boolean;
  /** How many of the writes changed their user's state (and so moved its version). */
  changed: number;
  /**
   * Per write, in input order: only when accepted and asked for (`FencedSaveOptions.stamps`).
   * A writer that keeps beliefs has them updated instead and need not ask: a core's sweep
   * saves a hundred thousand writes, and their stamps were its write-back's largest garbage.
   */
  stamps?: Array<{ epoch: string; version: number; changed: boolean }>;
}

export interface FencedSaveOptions {
  /**
   * The position in the pool's change log the writer has applied: a user whose presence
   * changed after it may still be held by a writer that believes an older state, so the
   * engine checks such users' states. Without it, every belief is checked.
   */
  seenLog?: string;
  /** Return each write's stamp (see FencedSaveResult.stamps). */
  stamps?: boolean;
}

/**
 * How a gateway's subscription finds lost messages: every message to a gateway carries its
 * number on the gateway's channel of its pool, and the store keeps the count published.
 */
export interface MissedMessages {
  /**
   * The pools whose messages may have been lost since the gateway last heard: every pool when
   * the subscriber connection was re-established (`reconnected`), one whose message numbers
   * skipped (`gap`), those whose stored count differs from the last number heard (`check`).
   * The gateway re-reads its users there (storedStates).
   */
  onMissed(pools: readonly number[], reason: MissedReason): void;
  /** The stored counts are compared with the numbers heard every this many ms; 0 never. */
  checkEveryMs: number;
  /** A comparison or a re-established subscription's count could not be read. */
  onCheckFailed?(error: unknown): void;
  /** A comparison or count read the store: it answers (again). */
  onCheckPassed?(): void;
}

export type MissedReason = 'reconnected' | 'gap' | 'check';

export interface FencedBadges {
  /**
   * Writes the badge states of users of one pool in one step, guarded by the pool's fencing
   * token; each changed state gets the next version and is published as a BadgeChange.
   * A rejected write is counted in the pool's stale-write counter.
   * The engine has read `writes` when this returns (it keeps only their `known` objects, to
   * update them): the caller may reuse the write objects for its next call.
   */
  saveFenced(
    pool: number,
    fence: number,
    writes: readonly FencedBadgeWrite[],
    computedAt: number,
    options?: FencedSaveOptions,
  ): Promise<FencedSaveResult>;
  staleWritesRejected(pool: number): Promise<number>;
  /**
   * Routes the users' badge changes to `gateway` for `ttlMs` from the store's now (renew
   * before it lapses): each change is then also published to that gateway alone. One call per
   * pool touched.
   */
  route(gateway: string, users: readonly string[], ttlMs: number): Promise<void>;
  /** Stops routing the users' changes to `gateway`; returns those no gateway holds any more. */
  unroute(gateway: string, users: readonly string[]): Promise<string[]>;
  /**
   * Receives the changes routed to `gateway`, from every pool. With `missed`, also tells of
   * pools whose messages to the gateway may have been lost (the memory engine loses none).
   */
  subscribeGateway(
    gateway: string,
    handler: (changes: BadgeChangeReader) => void,
    missed?: MissedMessages,
  ): Promise<() => Promise<void>>;
  /**
   * Tells the gateways holding each of `users` that the user's conversation list may have
   * changed (ListSignals): one call per pool touched, nothing for users no gateway holds.
   */
  signalLists(users: readonly string[]): Promise<void>;
  /**
   * Receives the users routed to `gateway` whose lists may have changed. Signals are not
   * numbered: `onLost` is told when the subscription came back after its connection dropped
   * (what was signalled meanwhile is lost; the memory engine loses none).
   */
  subscribeListSignals(
    gateway: string,
    handler: (users: string[]) => void,
    onLost?: () => void,
  ): Promise<() => Promise<void>>;
  /** The stored states of those of `users` that have one: one read per pool. */
  storedStates(users: readonly string[]): Promise<BadgeChange[]>;
  /**
   * Forgets the message counts of the gateways not in `live` (what a gateway that died without
   * closing its subscription left, one entry per pool); returns how many were forgotten.
   */
  forgetGateways(live: ReadonlySet<string>): Promise<number>;
  /** Receives every published change of the given pools. */
  subscribe(
    pools: readonly number[],
    handler: (pool: number, changes: BadgeChange[]) => void,
  ): Promise<() => Promise<void>>;
}

export interface HeldLock {
  readonly resource: string;
  /** Aborted when the lock is lost (an extension failed or it expired) or released. */
  readonly signal: AbortSignal;
  /** Wall-clock ms until which the lock is known to be held; writes must stop before it. */
  validUntil(): number;
  /** Stops extending and releases it; harmless to call twice. */
  release(): Promise<void>;
}

/**
 * Exclusive, self-extending locks on pools. The Redis implementation is Redlock over a quorum
 * of independent masters; the memory one serves a single process.
 */
export interface PoolLocks {
  /** One attempt; null when another holder has the lock. Extended every ttl/3 until lost. */
  tryAcquire(pool: number, ttlMs: number): Promise<HeldLock | null>;
  close(): Promise<void>;
}
