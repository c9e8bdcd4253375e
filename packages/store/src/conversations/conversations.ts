/** Conversations and their members' cursors, one of the sources beside the feed (docs/semantics.md). */

export interface ConversationMessage {
  seq: number;
  from: string;
  ts: number;
  /** A JSON object of at most 1 KiB, passed through to the conversation list. */
  preview?: Readonly<Record<string, unknown>> | undefined;
}

export interface MessageIngest {
  /** The conversation's maxSeq after the batch. */
  maxSeq: number;
  /**
   * Members who sent in the batch: user → their highest seq in it (their cursor is at least
   * that now). The same for a retried batch, so the retry's event is complete.
   */
  senders: Record<string, number>;
}

/** One conversation as its member sees it. */
export interface Membership {
  conversation: string;
  maxSeq: number;
  readSeq: number;
  muted: boolean;
  /** ts of the message with the highest seq (0 before the first message). */
  lastTs: number;
  preview: Record<string, unknown> | null;
}

/** A membership's counts alone, without its preview and ts: what a badge is computed from. */
export type MembershipSeqs = Pick<Membership, 'conversation' | 'maxSeq' | 'readSeq' | 'muted'>;

/** A member's cursor to move forward, as a read with `seq` moves it. */
export interface ReadSeqMove {
  conversation: string;
  user: string;
  seq: number;
}

export interface MembershipChange {
  added: string[];
  removed: string[];
}

/**
 * A membership change (replace, add, remove, dissolve) appends a `marks` event to the pool log
 * of each user it added or removed, and a retry of one that failed before appending appends them
 * then (Redis: the conversation's unlogged set).
 */
export interface Conversations {
  /** Creates the conversation when new; members joining start at its maxSeq, not muted. */
  replaceMembers(conversation: string, members: readonly string[]): Promise<MembershipChange>;
  addMembers(conversation: string, members: readonly string[]): Promise<MembershipChange>;
  /** Forgets the member's cursor and mute. */
  removeMember(conversation: string, user: string): Promise<boolean>;
  /** Deletes the conversation and every member's state in it; returns who were members. */
  dissolve(conversation: string): Promise<string[]>;
  /**
   * Ingests messages atomically against reads: maxSeq := max(maxSeq, seq), the preview and ts
   * of the highest seq win, a member sender's cursor moves to their seq. Idempotent on seq.
   * Null when the conversation does not exist (never created, or dissolved).
   */
  ingest(
    conversation: string,
    messages: readonly ConversationMessage[],
  ): Promise<MessageIngest | null>;
  /**
   * readSeq := max(readSeq, min(seq ?? maxSeq, maxSeq)), atomically against ingest. Null when
   * `user` is not a member; else the cursor after the move.
   */
  read(conversation: string, user: string, seq?: number): Promise<number | null>;
  /**
   * read(conversation, user, seq) of each move as one batch: one call per conversation on a
   * Redis Cluster, per chunk of conversations on one server, never one per move. The cursors
   * after the moves in input order, null for a move whose user is not a member.
   */
  advanceReadSeqs(moves: readonly ReadSeqMove[]): Promise<Array<number | null>>;
  /** False when `user` is not a member. */
  setMuted(conversation: string, user: string, muted: boolean): Promise<boolean>;
  /** Every conversation `user` is a member of, in no particular order. */
  memberships(user: string): Promise<Membership[]>;
  /**
   * The user's `limit` most recent memberships in the list's order (conversation-order.ts).
   * Redis: from the user's activity index and their large conversations, O(log n + limit +
   * large), never every membership (except to rebuild an index trims and departures emptied).
   */
  conversationList(user: string, limit: number): Promise<Membership[]>;
  /**
   * memberships() of each user, in input order, without previews and ts: each conversation's
   * maxSeq is read once however many of the users are its members (a batch of cold starts).
   * `indexes`: each user's conversation index (UserInputs.conversations) when read already.
   */
  membershipSeqs(
    users: readonly string[],
    indexes?: ReadonlyArray<readonly string[]>,
  ): Promise<MembershipSeqs[][]>;
  members(conversation: string): Promise<string[] | null>;
}
