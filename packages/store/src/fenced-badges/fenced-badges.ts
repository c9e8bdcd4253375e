import type { BadgeChange, BadgeChangeReader } from '@bubble/protocol';
/**
 * Fenced badge writes of a pool's owner, the routes of users' changes to the gateways holding
 * them, and the subscriptions that receive those changes.
 */

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
