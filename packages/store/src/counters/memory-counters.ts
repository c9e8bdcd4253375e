import { idRecord } from '@bubble/protocol';
import type { CounterCounts, CounterEvent, InteractionCounters } from './counters.js';

interface KindState {
  /** event id → arrivedAt */
  events: Map<string, number>;
  readAt: number;
}

interface UserCounters {
  kinds: Map<string, KindState>;
  /** retractionKey(kind, id) → when it was retracted */
  retracted: Map<string, number>;
  /** The store time of the last count: later events are stamped after it. */
  countedAt: number;
  /** The last stamp given, of any kind: stamps increase strictly per user. */
  last: number;
  /** When this user's counters were last written: all of it is forgotten a window later. */
  touchedAt: number;
}

/**
 * The interaction counters of the embedded engine, stamped on its own clock as the Redis
 * scripts stamp on TIME. Each call runs to completion without yielding (atomic per user).
 */
export class MemoryCounters implements InteractionCounters {
  private readonly byUser = new Map<string, UserCounters>();

  constructor(private readonly now: () => number) {}

  async ingest(
    events: readonly CounterEvent[],
    windowMs: number,
  ): Promise<{ accepted: number; ignored: number }> {
    const now = this.now();
    let accepted = 0;
    // Trimmed once per user of the batch, not once per event.
    const states = new Map<string, UserCounters>();
    for (const { user, kind, id } of events) {
      let state = states.get(user);
      if (!state) states.set(user, (state = this.live(user, now, windowMs, true)!));
      const key = retractionKey(kind, id);
      const k = kindOf(state, kind);
      if (state.retracted.has(key) || k.events.has(id)) continue;
      const stamp = Math.max(now, state.last + 1, k.readAt + 1, state.countedAt + 1);
      k.events.set(id, stamp);
      state.last = stamp;
      state.touchedAt = now;
      accepted++;
    }
    return { accepted, ignored: events.length - accepted };
  }

  async retract({ user, kind, id }: CounterEvent, windowMs: number): Promise<boolean> {
    const now = this.now();
    const state = this.live(user, now, windowMs, true)!;
    const removed = kindOf(state, kind).events.delete(id);
    state.retracted.set(retractionKey(kind, id), now);
    state.touchedAt = now;
    return removed;
  }

  async read(user: string, kinds: readonly string[], upTo: number | undefined): Promise<void> {
    const now = this.now();
    const state = this.byUser.get(user);
    if (!state) return;
    // Stamps of a burst run ahead of the clock: a read still reaches what it was shown.
    const reach = Math.max(now, state.last);
    for (const kind of kinds) {
      const k = state.kinds.get(kind);
      if (!k) continue;
      const target = upTo === undefined ? reach : Math.min(upTo, reach);
      k.readAt = Math.max(k.readAt, target);
    }
  }

  async counts(user: string, kinds: readonly string[], windowMs: number): Promise<CounterCounts> {
    const now = this.now();
    const counts = idRecord<number>();
    // As on Redis: with no kind asked nothing is counted, so nothing bounds a read.
    if (kinds.length === 0) return { counts, asOf: null };
    const state = this.live(user, now, windowMs, false);
    if (!state) return { counts, asOf: null };
    state.countedAt = Math.max(state.countedAt, now);
    for (const kind of kinds) {
      const k = state.kinds.get(kind);
      if (!k) continue;
      let n = 0;
      for (const at of k.events.values()) if (at > k.readAt) n++;
      if (n > 0) counts[kind] = n;
    }
    return { counts, asOf: Math.max(now, state.last) };
  }

  /** Whether anything is kept for `user` (introspection, as SCAN is on Redis). */
  holds(user: string): boolean {
    return this.byUser.has(user);
  }

  async dropUsers(users: readonly string[]): Promise<void> {
    for (const user of users) this.byUser.delete(user);
  }

  /** The user's state with what the window left behind trimmed; created when `create`. */
  private live(
    user: string,
    now: number,
    windowMs: number,
    create: boolean,
  ): UserCounters | undefined {
    const cutoff = now - windowMs;
    let state = this.byUser.get(user);
    // As the Redis keys expire a window after their last write.
    if (state && state.touchedAt <= cutoff) {
      this.byUser.delete(user);
      state = undefined;
    }
    if (!state) {
      if (!create) return undefined;
      // A count of a user without state leaves no trace: it may have been at any time up to now.
      state = { kinds: new Map(), retracted: new Map(), countedAt: now, last: 0, touchedAt: now };
      this.byUser.set(user, state);
    }
    for (const k of state.kinds.values()) {
      for (const [id, at] of k.events) if (at <= cutoff) k.events.delete(id);
    }
    for (const [key, at] of state.retracted) if (at <= cutoff) state.retracted.delete(key);
    return state;
  }
}

function kindOf(state: UserCounters, kind: string): KindState {
  let k = state.kinds.get(kind);
  if (!k) state.kinds.set(kind, (k = { events: new Map(), readAt: 0 }));
  return k;
}

/** Kinds and ids may hold ':': the kind's length tells "like" + "post:1" from "like:post" + "1". */
function retractionKey(kind: string, id: string): string {
  return `${kind.length}:${kind}:${id}`;
}
