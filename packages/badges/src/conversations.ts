import { BubbleError, LIMITS, assertId } from '@bubble/protocol';
import {
  byActivity,
  MAX_WEBHOOK_ITEMS,
  type ConversationMessage,
  type Membership,
  type WebhookItem,
} from '@bubble/store';
import type { BadgeContext } from './context.js';
import { DISSOLVED_USERS_PER_JOB } from './offline-jobs.js';
import { marksChanged } from './pool-events.js';
import { assertPositiveId, notMember, uniqueIds } from './validation.js';

/** An entry of GET /v1/conversations. */
export interface ConversationListItem {
  id: string;
  unread: number;
  maxSeq: number;
  lastTs: number;
  preview: Record<string, unknown> | null;
  muted: boolean;
}

/** A message as the platform sends it: without `ts`, it is stamped now. */
export type PlatformMessage = Omit<ConversationMessage, 'ts'> & { ts?: number | undefined };

/**
 * Conversations: memberships, messages, mutes and a member's list. A message is one write on
 * the conversation's own keys, for two members or a million; membership and mute changes tell
 * the members' pools to reload them (the store appends a membership change's events itself, so
 * a retry of one that failed before appending still appends them).
 */
export class Conversations {
  constructor(private readonly ctx: BadgeContext) {}

  async replaceMembers(conversation: string, members: readonly string[]): Promise<void> {
    assertId(conversation, 'conversation');
    const ids = uniqueIds(members, 'member');
    const { added, removed } = await this.ctx.store.conversations.replaceMembers(conversation, ids);
    await Promise.all([this.listsChanged([...added, ...removed]), this.membersLeft(removed)]);
  }

  async addMembers(conversation: string, members: readonly string[]): Promise<void> {
    assertId(conversation, 'conversation');
    const ids = uniqueIds(members, 'member');
    const { added } = await this.ctx.store.conversations.addMembers(conversation, ids);
    await this.listsChanged(added);
  }

  async removeMember(conversation: string, user: string): Promise<void> {
    assertId(conversation, 'conversation');
    assertId(user, 'member');
    if (await this.ctx.store.conversations.removeMember(conversation, user)) {
      await Promise.all([this.listsChanged([user]), this.membersLeft([user])]);
    }
  }

  async dissolve(conversation: string): Promise<void> {
    assertId(conversation, 'conversation');
    const members = await this.ctx.store.conversations.dissolve(conversation);
    await Promise.all([this.listsChanged(members), this.membersLeft(members)]);
  }

  /** 404 for a conversation never created or dissolved; the batch is all-or-nothing. */
  async ingestMessages(
    conversation: string,
    messages: readonly PlatformMessage[],
  ): Promise<{ accepted: number }> {
    assertId(conversation, 'conversation');
    const batch = messageBatch(messages, this.ctx.clock.now());
    if (batch.length === 0) return { accepted: 0 };
    const { store } = this.ctx;
    const result = await store.conversations.ingest(conversation, batch);
    if (!result) {
      throw new BubbleError('UB_ERR_NOT_FOUND', `conversation ${conversation} does not exist`);
    }
    await Promise.all([
      store.changes.appendSharedEvents([
        { kind: 'messages', conversation, maxSeq: result.maxSeq, senders: result.senders },
      ]),
      // The other members' lists moved with their unread count, which their badge carries.
      this.listsChanged(Object.keys(result.senders)),
    ]);
    // After the write, also when it was a retry that changed nothing (the job may be what failed).
    await this.ctx.offlineJobs?.append({
      kind: 'conversation',
      conversation,
      maxSeq: result.maxSeq,
      senders: Object.keys(result.senders),
      items: batch.slice(-MAX_WEBHOOK_ITEMS).map((m) => messageItem(conversation, m)),
    });
    return { accepted: batch.length };
  }

  async setMuted(user: string, conversation: string, muted: boolean): Promise<void> {
    assertId(user, 'user');
    assertId(conversation, 'conversation');
    if (!(await this.ctx.store.conversations.setMuted(conversation, user, muted))) {
      throw notMember(conversation);
    }
    await Promise.all([marksChanged(this.ctx, [user]), this.listsChanged([user])]);
  }

  /** Newest activity first, ties by the higher seq; at most `limit` (≤ 100). */
  async conversationList(user: string, limit: number): Promise<ConversationListItem[]> {
    assertId(user, 'user');
    const { conversations } = this.ctx.store;
    const memberships = await conversations.conversationList(
      user,
      Math.min(limit, LIMITS.maxConversationList),
    );
    return memberships.map((m) => ({
      id: m.conversation,
      unread: Math.max(0, m.maxSeq - m.readSeq),
      maxSeq: m.maxSeq,
      lastTs: m.lastTs,
      preview: m.preview,
      muted: m.muted,
    }));
  }

  /** Offline delivery: the unread count of a conversation left no longer counts for them. */
  private async membersLeft(users: readonly string[]): Promise<void> {
    const jobs = this.ctx.offlineJobs;
    if (!jobs) return;
    for (let first = 0; first < users.length; first += DISSOLVED_USERS_PER_JOB) {
      await jobs.append({
        kind: 'users',
        users: users.slice(first, first + DISSOLVED_USERS_PER_JOB),
        source: 'conversations',
        decrease: true,
      });
    }
  }

  /**
   * Tells the gateways holding `users` that their lists changed in a way their badge may not
   * show (docs/architecture.md, "Watched lists"): the watchers among them read their list again.
   */
  private async listsChanged(users: readonly string[]): Promise<void> {
    if (users.length > 0) await this.ctx.store.fencedBadges.signalLists(users);
  }
}

/** Newest activity first, then the higher seq, then by id. */
export function sortedByActivity(memberships: readonly Membership[]): Membership[] {
  return [...memberships].sort(byActivity);
}

/** What a message tells a push service that writes an alert: its sender and preview as ingested. */
function messageItem(conversation: string, m: ConversationMessage): WebhookItem {
  return m.preview
    ? { kind: 'message', conversation, seq: m.seq, from: m.from, preview: { ...m.preview } }
    : { kind: 'message', conversation, seq: m.seq, from: m.from };
}

/** Every message's seq and sender checked, each stamped `now` unless it has a ts. */
function messageBatch(messages: readonly PlatformMessage[], now: number): ConversationMessage[] {
  return messages.map((m) => {
    assertPositiveId(m.seq, 'seq');
    assertId(m.from, 'sender');
    return { seq: m.seq, from: m.from, ts: m.ts ?? now, preview: m.preview };
  });
}
