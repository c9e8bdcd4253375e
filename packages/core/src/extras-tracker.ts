import {
  NOTICES_FIELD,
  addExtraFields,
  encodeCounts,
  idRecord,
  type ExtraCounts,
} from '@bubble/protocol';
import type { MembershipSeqs, SharedEvent, UserMarksState } from '@bubble/store';
import { countNoticesAfter, shownReddots } from '@bubble/badges';

interface HeldMember {
  readSeq: number;
  muted: boolean;
}

const NO_CLICKS: Readonly<Record<string, number>> = Object.freeze({});
const NO_COUNTERS: Readonly<Record<string, number>> = Object.freeze({});

interface HeldUser {
  seen: number | null;
  /** NO_CLICKS when none: most users have none, and 100k empty objects are marked by every GC. */
  clicks: Readonly<Record<string, number>>;
  /** null when none, for the same reason (an empty Map still holds a table). */
  conversations: Map<string, HeldMember> | null;
  /** Interaction counters, kind → count (non-zero only); NO_COUNTERS when none. */
  counters: Readonly<Record<string, number>>;
  /**
   * The watermark of the count they came from (CounterCounts.asOf), null when the user has no
   * counter state: every event counted is stamped at or before it, every one missed after it.
   */
  countersAsOf: number | null;
  /** The extra fields last stored for the user, as stored (encodeCounts); null when unknown. */
  reported: string | null;
}

/**
 * What a core holds beside the feed for its online users: the live notice ids and marked red
 * dots (shared by everyone), each user's notice cursor, clicks and conversations, and every
 * held conversation's maxSeq. A notice or red dot touches every held user in memory; a message
 * touches the held members of its conversation; none of it costs a Redis read.
 */
export class ExtrasTracker {
  private liveIds: number[] = [];
  private marked: Record<string, number> = idRecord<number>();
  /** Keys of `marked`, kept so that the per-user fast path never enumerates it. */
  private markedCount = 0;
  private readonly users = new Map<string, HeldUser>();
  /** conversation → maxSeq and the held users who are members */
  private readonly conversations = new Map<string, { maxSeq: number; members: Set<string> }>();
  private readonly dirty = new Set<string>();
  /** Held users with a non-zero interaction counter (noneHeld stays a constant-time check). */
  private withCounters = 0;

  get userCount(): number {
    return this.users.size;
  }

  hasUser(user: string): boolean {
    return this.users.has(user);
  }

  /** The shared sources, loaded whole (at start, or after the shared log was trimmed past us). */
  setShared(liveIds: readonly number[], marked: Readonly<Record<string, number>>): void {
    this.liveIds = [...liveIds].sort((a, b) => a - b);
    this.marked = Object.assign(idRecord<number>(), marked);
    this.markedCount = Object.keys(this.marked).length;
    for (const user of this.users.keys()) this.dirty.add(user);
  }

  setUser(
    user: string,
    marks: UserMarksState,
    memberships: readonly MembershipSeqs[],
    counters: Readonly<Record<string, number>> = NO_COUNTERS,
    countersAsOf: number | null = null,
  ): void {
    const previous = this.users.get(user);
    if (previous) {
      this.leaveAll(user, previous);
      if (previous.counters !== NO_COUNTERS) this.withCounters--;
    }
    const held: HeldUser = {
      seen: marks.seen,
      clicks:
        Object.keys(marks.clicks).length > 0
          ? Object.assign(idRecord<number>(), marks.clicks)
          : NO_CLICKS,
      conversations: memberships.length > 0 ? new Map() : null,
      counters: heldCounters(counters),
      countersAsOf,
      reported: previous?.reported ?? null,
    };
    for (const m of memberships) {
      held.conversations!.set(m.conversation, { readSeq: m.readSeq, muted: m.muted });
      let c = this.conversations.get(m.conversation);
      if (!c)
        this.conversations.set(m.conversation, (c = { maxSeq: m.maxSeq, members: new Set() }));
      c.maxSeq = Math.max(c.maxSeq, m.maxSeq);
      c.members.add(user);
    }
    if (held.counters !== NO_COUNTERS) this.withCounters++;
    this.users.set(user, held);
    this.dirty.add(user);
  }

  /** A held user's interaction counters, reloaded (a `counters` event): O(their kinds). */
  setCounters(
    user: string,
    counters: Readonly<Record<string, number>>,
    countersAsOf: number | null = null,
  ): void {
    const held = this.users.get(user);
    if (!held) return;
    if (held.counters !== NO_COUNTERS) this.withCounters--;
    held.counters = heldCounters(counters);
    held.countersAsOf = countersAsOf;
    if (held.counters !== NO_COUNTERS) this.withCounters++;
    this.dirty.add(user);
  }

  removeUser(user: string): void {
    const held = this.users.get(user);
    if (!held) return;
    this.leaveAll(user, held);
    if (held.counters !== NO_COUNTERS) this.withCounters--;
    this.users.delete(user);
    this.dirty.delete(user);
  }

  apply(event: SharedEvent): void {
    switch (event.kind) {
      case 'notice': {
        const at = lowerBound(this.liveIds, event.id);
        const present = this.liveIds[at] === event.id;
        if (event.live && !present) this.liveIds.splice(at, 0, event.id);
        else if (!event.live && present) this.liveIds.splice(at, 1);
        else return;
        for (const [user, held] of this.users) {
          if (held.seen !== null && held.seen < event.id) this.dirty.add(user);
        }
        return;
      }
      case 'reddot':
        if (event.ts === null) {
          if (Object.hasOwn(this.marked, event.name)) this.markedCount--;
          delete this.marked[event.name];
        } else {
          if (!Object.hasOwn(this.marked, event.name)) this.markedCount++;
          this.marked[event.name] = event.ts;
        }
        for (const user of this.users.keys()) this.dirty.add(user);
        return;
      case 'messages': {
        const c = this.conversations.get(event.conversation);
        if (!c) return;
        c.maxSeq = Math.max(c.maxSeq, event.maxSeq);
        for (const user of c.members) {
          const member = this.users.get(user)!.conversations!.get(event.conversation)!;
          const sent = event.senders[user];
          if (sent !== undefined) member.readSeq = Math.max(member.readSeq, sent);
          this.dirty.add(user);
        }
        return;
      }
    }
  }

  /**
   * The time a badge of the user is as of: the watermark of their counters' count, null when
   * they have no counter state (the sweep's time then). Pushed as computedAt, so a read with
   * that `upTo` never clears an event the badge missed.
   */
  countersAsOf(user: string): number | null {
    return this.users.get(user)?.countersAsOf ?? null;
  }

  extrasOf(user: string): ExtraCounts {
    const held = this.users.get(user);
    if (!held) return { notices: 0, conversations: [], reddots: [], counters: NO_COUNTERS };
    const conversations: ExtraCounts['conversations'] = [];
    for (const [id, member] of held.conversations ?? []) {
      const maxSeq = this.conversations.get(id)!.maxSeq;
      conversations.push({ id, unread: Math.max(0, maxSeq - member.readSeq), muted: member.muted });
    }
    return {
      notices: countNoticesAfter(this.liveIds, held.seen),
      conversations,
      reddots: shownReddots(this.marked, held.clicks),
      counters: held.counters,
    };
  }

  /**
   * True while no held user can have an extra field: no live notice, red dot, conversation or
   * interaction counter.
   */
  get noneHeld(): boolean {
    return (
      this.liveIds.length === 0 &&
      this.markedCount === 0 &&
      this.conversations.size === 0 &&
      this.withCounters === 0
    );
  }

  /** The extra fields of the user's badge state (docs/redis-keys.md), added to `fields`. */
  addFieldsOf(user: string, fields: Record<string, number>): void {
    const held = this.users.get(user);
    if (!held) return;
    // The common cases build nothing: no conversation and no red dot marked leaves at most
    // the notices, counted from the user's cursor.
    if (held.conversations === null && this.markedCount === 0 && held.counters === NO_COUNTERS) {
      if (held.seen === null || this.liveIds.length === 0) return;
      const notices = countNoticesAfter(this.liveIds, held.seen);
      if (notices > 0) fields[NOTICES_FIELD] = notices;
      return;
    }
    addExtraFields(fields, this.extrasOf(user));
  }

  /**
   * The user's extra fields as held here, encoded as the store encodes a badge state's counts:
   * equal keys are equal stored states (a zero field is stored as absent).
   */
  heldKey(user: string): string {
    const fields = idRecord<number>();
    this.addFieldsOf(user, fields);
    return encodeCounts(fields);
  }

  /** What is stored for the user now (a write of ours, or of a gateway). */
  markReported(user: string, extraFields: Readonly<Record<string, number>> | null): void {
    const held = this.users.get(user);
    if (held) held.reported = extraFields === null ? null : encodeCounts(extraFields);
  }

  /** Users whose extra fields differ from what is stored; they count as stored once taken. */
  takeChanged(): string[] {
    const changed: string[] = [];
    for (const user of this.dirty) {
      const held = this.users.get(user);
      if (!held) continue;
      const key = this.heldKey(user);
      if (key !== held.reported) {
        held.reported = key;
        changed.push(user);
      }
    }
    this.dirty.clear();
    return changed;
  }

  private leaveAll(user: string, held: HeldUser): void {
    if (held.conversations === null) return;
    for (const id of held.conversations.keys()) {
      const c = this.conversations.get(id);
      if (!c) continue;
      c.members.delete(user);
      if (c.members.size === 0) this.conversations.delete(id);
    }
  }
}

function heldCounters(
  counters: Readonly<Record<string, number>>,
): Readonly<Record<string, number>> {
  for (const kind in counters)
    if (counters[kind]! > 0) return Object.assign(idRecord<number>(), counters);
  return NO_COUNTERS;
}

function lowerBound(sorted: readonly number[], value: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
