import type { FrameStem } from '@bubble/protocol';
import type { HeldBadge } from './held-badge.js';

/** Receives a held user's badge on every change (a socket of theirs). */
export interface BadgeListener {
  onBadge(badge: HeldBadge): void;
}

/** A user held by this gateway: their sockets or poll, their cached badge, their pending push. */
export interface LiveUser {
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

const RESOLVED = Promise.resolve();

/** A user newly held, with nothing cached or pending; every field has its lasting shape. */
export function newLiveUser(user: string): LiveUser {
  return {
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
}

/** A route and presence written: nothing to wait for any more. */
export function markReady(live: LiveUser): void {
  live.ready = RESOLVED;
}

export function addListener(live: LiveUser, listener: BadgeListener): void {
  const { listeners } = live;
  if (listeners === null) live.listeners = listener;
  else if (listeners instanceof Set) listeners.add(listener);
  else if (listeners !== listener) live.listeners = new Set([listeners, listener]);
}

/** Returns whether `listener` was one of the user's. */
export function removeListener(live: LiveUser, listener: BadgeListener): boolean {
  const { listeners } = live;
  if (listeners === listener) {
    live.listeners = null;
    return true;
  }
  if (!(listeners instanceof Set) || !listeners.delete(listener)) return false;
  if (listeners.size === 1) live.listeners = listeners.values().next().value!;
  else if (listeners.size === 0) live.listeners = null;
  return true;
}
