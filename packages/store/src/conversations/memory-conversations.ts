import { idRecord } from '@bubble/protocol';
import type { MemoryChangeLog } from '../change-log/memory-change-log.js';
import { marksEventsByPool } from '../marks/marks-events.js';
import { byActivity } from './conversation-order.js';
import type {
  ConversationMessage,
  Conversations,
  Membership,
  MembershipChange,
  MembershipSeqs,
  MessageIngest,
  ReadSeqMove,
} from './conversations.js';

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
    return this.advanceReadSeq(conversation, user, seq);
  }

  async advanceReadSeqs(moves: readonly ReadSeqMove[]): Promise<Array<number | null>> {
    return moves.map(({ conversation, user, seq }) => this.advanceReadSeq(conversation, user, seq));
  }

  private advanceReadSeq(conversation: string, user: string, seq?: number): number | null {
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
