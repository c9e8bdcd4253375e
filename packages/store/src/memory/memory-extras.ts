import { idRecord } from '@bubble/protocol';
import type {
  ConversationMessage,
  Conversations,
  Membership,
  MembershipChange,
  MembershipSeqs,
  MessageIngest,
  NoticeBoard,
  RedDots,
  UserMarks,
  UserMarksState,
} from '../extras-types.js';
import { byActivity } from '../conversation-order.js';
import { marksEventsByPool } from '../marks-events.js';
import type { MemoryChangeLog } from './memory-change-log.js';

/** As the Redis engine: the last sight moves at most once an hour. */
const SIGHT_THROTTLE_MS = 3_600_000;

/** Each write of a notice or red dot appends its shared event in the same synchronous step. */
export class MemoryNoticeBoard implements NoticeBoard {
  private readonly live = new Set<number>();
  private highest = 0;

  constructor(private readonly log: MemoryChangeLog) {}

  async publish(id: number): Promise<boolean> {
    if (this.live.has(id)) return false;
    this.live.add(id);
    this.highest = Math.max(this.highest, id);
    this.log.appendSharedEventsNow([{ kind: 'notice', id, live: true }]);
    return true;
  }

  async withdraw(id: number): Promise<boolean> {
    if (!this.live.delete(id)) return false;
    this.log.appendSharedEventsNow([{ kind: 'notice', id, live: false }]);
    return true;
  }

  async highestId(): Promise<number> {
    return this.highest;
  }

  async countAfter(seen: number): Promise<number> {
    let count = 0;
    for (const id of this.live) if (id > seen) count++;
    return count;
  }

  async liveIds(): Promise<number[]> {
    return [...this.live].sort((a, b) => a - b);
  }
}

export class MemoryRedDots implements RedDots {
  private readonly marked = new Map<string, number>();

  constructor(private readonly log: MemoryChangeLog) {}

  async mark(name: string, ts: number): Promise<void> {
    this.marked.set(name, ts);
    this.log.appendSharedEventsNow([{ kind: 'reddot', name, ts }]);
  }

  async clear(name: string): Promise<boolean> {
    if (!this.marked.delete(name)) return false;
    this.log.appendSharedEventsNow([{ kind: 'reddot', name, ts: null }]);
    return true;
  }

  async all(): Promise<Record<string, number>> {
    return Object.fromEntries(this.marked);
  }
}

interface Marks {
  seen: number | null;
  at: number;
  clicks: Map<string, number>;
}

export class MemoryUserMarks implements UserMarks {
  private readonly byUser = new Map<string, Marks>();
  /** The last-seen index: user → sight, as the inactive job walks it. */
  private readonly lastSeen = new Map<string, number>();

  constructor(
    private readonly log: MemoryChangeLog,
    private readonly pools: number,
    private readonly lifecycle: {
      isOnline(user: string): boolean;
      /** Forgets the user's state beside their marks (MemoryStore.forgetInactiveUser). */
      forget(user: string): void;
    },
  ) {}

  async see(
    user: string,
    now: number,
    highestNoticeId: () => Promise<number>,
  ): Promise<{ seen: number; first: boolean }> {
    const first = this.byUser.get(user)?.seen == null;
    // Read before the marks: another call may see the user while we await.
    const highest = first ? await highestNoticeId() : 0;
    const marks = this.marksOf(user);
    if (marks.seen === null) {
      marks.seen = highest;
      // In the step that sets the cursor: a core holding the user reloads their marks.
      for (const [pool, events] of marksEventsByPool([user], this.pools)) {
        this.log.appendPoolEventsNow(pool, events);
      }
    }
    if (marks.at + SIGHT_THROTTLE_MS <= now) {
      marks.at = now;
      this.lastSeen.set(user, now);
    }
    return { seen: marks.seen!, first };
  }

  async state(user: string): Promise<UserMarksState> {
    const marks = this.byUser.get(user);
    return { seen: marks?.seen ?? null, clicks: Object.fromEntries(marks?.clicks ?? []) };
  }

  async advanceSeen(user: string, to: number): Promise<number> {
    const marks = this.marksOf(user);
    marks.seen = Math.max(marks.seen ?? -Infinity, to);
    return marks.seen;
  }

  async click(user: string, names: readonly string[], at: number): Promise<void> {
    if (names.length === 0) return;
    const marks = this.marksOf(user);
    for (const name of names) marks.clicks.set(name, at);
  }

  async dropInactive(before: number, limit: number, now: number): Promise<string[]> {
    const candidates = [...this.lastSeen]
      .filter(([, at]) => at <= before)
      // Oldest sight first, ties by name: the order of the Redis engine's ZSET.
      .sort((a, b) => a[1] - b[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
      .slice(0, limit);
    const dropped: string[] = [];
    for (const [user] of candidates) {
      if (this.lifecycle.isOnline(user)) {
        // Online through presence (a live connection counts): seen now, as the Redis engine.
        this.marksOf(user).at = now;
        this.lastSeen.set(user, now);
        continue;
      }
      if ((this.byUser.get(user)?.at ?? 0) > before) continue;
      this.byUser.delete(user);
      this.lastSeen.delete(user);
      this.lifecycle.forget(user);
      dropped.push(user);
    }
    for (const [pool, events] of marksEventsByPool(dropped, this.pools)) {
      this.log.appendPoolEventsNow(pool, events);
    }
    return dropped;
  }

  /** What of the user's own state this part holds (MemoryStore.heldFor). */
  holds(user: string): string[] {
    const out: string[] = [];
    if (this.byUser.has(user)) out.push('marks');
    if (this.lastSeen.has(user)) out.push('lastseen');
    return out;
  }

  private marksOf(user: string): Marks {
    let marks = this.byUser.get(user);
    if (!marks) this.byUser.set(user, (marks = { seen: null, at: 0, clicks: new Map() }));
    return marks;
  }
}

interface Conversation {
  maxSeq: number;
  lastTs: number;
  preview: Record<string, unknown> | null;
  /** member → cursor and mute */
  members: Map<string, { readSeq: number; muted: boolean }>;
}

/** A membership change appends its users' `marks` events in the same synchronous step. */
export class MemoryConversations implements Conversations {
  private readonly byId = new Map<string, Conversation>();
  private readonly byUser = new Map<string, Set<string>>();

  constructor(
    private readonly log: MemoryChangeLog,
    private readonly pools: number,
  ) {}

  async replaceMembers(
    conversation: string,
    members: readonly string[],
  ): Promise<MembershipChange> {
    return this.join(conversation, members, true);
  }

  async addMembers(conversation: string, members: readonly string[]): Promise<MembershipChange> {
    return this.join(conversation, members, false);
  }

  async removeMember(conversation: string, user: string): Promise<boolean> {
    const removed = this.byId.get(conversation)?.members.delete(user) ?? false;
    this.unindex(user, conversation);
    if (removed) this.logMarks([user]);
    return removed;
  }

  async dissolve(conversation: string): Promise<string[]> {
    const c = this.byId.get(conversation);
    if (!c) return [];
    this.byId.delete(conversation);
    const members = [...c.members.keys()];
    for (const user of members) this.unindex(user, conversation);
    this.logMarks(members);
    return members;
  }

  async ingest(
    conversation: string,
    messages: readonly ConversationMessage[],
  ): Promise<MessageIngest | null> {
    const c = this.byId.get(conversation);
    if (!c) return null;
    const senders = idRecord<number>();
    for (const { seq, from, ts, preview } of messages) {
      if (seq > c.maxSeq) {
        c.maxSeq = seq;
        c.lastTs = ts;
        c.preview = preview ? structuredClone({ ...preview }) : null;
      }
      const member = c.members.get(from);
      if (!member) continue;
      if (seq > member.readSeq) member.readSeq = seq;
      senders[from] = Math.max(senders[from] ?? 0, seq);
    }
    return { maxSeq: c.maxSeq, senders };
  }

  async read(conversation: string, user: string, seq?: number): Promise<number | null> {
    const c = this.byId.get(conversation);
    const member = c?.members.get(user);
    if (!c || !member) return null;
    member.readSeq = Math.max(member.readSeq, Math.min(seq ?? c.maxSeq, c.maxSeq));
    return member.readSeq;
  }

  async setMuted(conversation: string, user: string, muted: boolean): Promise<boolean> {
    const member = this.byId.get(conversation)?.members.get(user);
    if (!member) return false;
    member.muted = muted;
    return true;
  }

  async memberships(user: string): Promise<Membership[]> {
    const out: Membership[] = [];
    for (const conversation of this.byUser.get(user) ?? []) {
      const c = this.byId.get(conversation)!;
      const member = c.members.get(user)!;
      out.push({
        conversation,
        maxSeq: c.maxSeq,
        readSeq: member.readSeq,
        muted: member.muted,
        lastTs: c.lastTs,
        preview: c.preview ? structuredClone(c.preview) : null,
      });
    }
    return out;
  }

  async conversationList(user: string, limit: number): Promise<Membership[]> {
    return (await this.memberships(user)).sort(byActivity).slice(0, limit);
  }

  async membershipSeqs(
    users: readonly string[],
    indexes?: ReadonlyArray<readonly string[]>,
  ): Promise<MembershipSeqs[][]> {
    return users.map((user, i) => {
      const out: MembershipSeqs[] = [];
      for (const conversation of indexes?.[i] ?? this.byUser.get(user) ?? []) {
        const c = this.byId.get(conversation);
        const member = c?.members.get(user);
        // As on Redis: an index read before the user left no longer stands for a membership.
        if (!c || !member) continue;
        out.push({ conversation, maxSeq: c.maxSeq, readSeq: member.readSeq, muted: member.muted });
      }
      return out;
    });
  }

  async members(conversation: string): Promise<string[] | null> {
    const c = this.byId.get(conversation);
    return c ? [...c.members.keys()] : null;
  }

  private join(
    conversation: string,
    members: readonly string[],
    replace: boolean,
  ): MembershipChange {
    let c = this.byId.get(conversation);
    if (!c) {
      c = { maxSeq: 0, lastTs: 0, preview: null, members: new Map() };
      this.byId.set(conversation, c);
    }
    const removed: string[] = [];
    if (replace) {
      const wanted = new Set(members);
      for (const user of [...c.members.keys()]) {
        if (wanted.has(user)) continue;
        c.members.delete(user);
        this.unindex(user, conversation);
        removed.push(user);
      }
    }
    const added: string[] = [];
    for (const user of members) {
      if (c.members.has(user)) continue;
      c.members.set(user, { readSeq: c.maxSeq, muted: false });
      let index = this.byUser.get(user);
      if (!index) this.byUser.set(user, (index = new Set()));
      index.add(conversation);
      added.push(user);
    }
    this.logMarks([...added, ...removed]);
    return { added, removed };
  }

  private logMarks(users: readonly string[]): void {
    for (const [pool, events] of marksEventsByPool(users, this.pools)) {
      this.log.appendPoolEventsNow(pool, events);
    }
  }

  holds(user: string): boolean {
    return this.byUser.has(user);
  }

  private unindex(user: string, conversation: string): void {
    const index = this.byUser.get(user);
    if (!index) return;
    index.delete(conversation);
    if (index.size === 0) this.byUser.delete(user);
  }
}
