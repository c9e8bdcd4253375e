/**
 * The sources beside the feed (docs/semantics.md): system notices, red dots and conversations, and
 * the per-user marks they are counted from. Memory and Redis engines side by side; the contract
 * suite holds them equal.
 */

/** Each write that changes something appends its shared event in the same step (one script). */
export interface NoticeBoard {
  /** Publishes notice `id` (O(1) writes). False when it is live already (nothing changes). */
  publish(id: number, ts: number): Promise<boolean>;
  /** Withdraws a live notice; false when there was none. */
  withdraw(id: number): Promise<boolean>;
  /** The highest id ever published, withdrawn ones included (0 before the first). */
  highestId(): Promise<number>;
  /** Live notices with an id above `seen`. */
  countAfter(seen: number): Promise<number>;
  /** Every live notice id, ascending (what a core holds in memory). */
  liveIds(): Promise<number[]>;
}

/** Each write that changes something appends its shared event in the same step (one script). */
export interface RedDots {
  /** G(name) := ts (one write). */
  mark(name: string, ts: number): Promise<void>;
  /** Removes G(name); false when it was not set. */
  clear(name: string): Promise<boolean>;
  /** name → G(name) of every marked red dot. */
  all(): Promise<Record<string, number>>;
}

/** What a user's notices and red dots are counted from. */
export interface UserMarksState {
  /** The notice cursor, null while the user was never seen. */
  seen: number | null;
  /** Red dot name → when the user last clicked it. */
  clicks: Record<string, number>;
}

/**
 * Per-user state with the "inactive user" lifecycle: the notice cursor, red-dot clicks and the
 * last sight. Dropped for users unseen for BUBBLE_INACTIVE_DAYS; the next visit starts afresh.
 */
export interface UserMarks {
  /**
   * An end-user call saw `user` at `now`: the first sight sets the notice cursor to the highest
   * notice id published so far, and appends a `marks` event to the user's pool log (on Redis
   * after the script; a later sight appends it when that append failed). Returns the cursor,
   * and whether this call started it.
   */
  see(
    user: string,
    now: number,
    highestNoticeId: () => Promise<number>,
  ): Promise<{ seen: number; first: boolean }>;
  state(user: string): Promise<UserMarksState>;
  /** seen := max(seen, to); returns the cursor after the move. */
  advanceSeen(user: string, to: number): Promise<number>;
  /** clicked(user, name) := at. */
  click(user: string, names: readonly string[], at: number): Promise<void>;
  /**
   * Drops the marks of at most `limit` users last seen before `before`, and with them every
   * other state kept for them alone but their follows, topic follows, memberships and
   * conversation cursors (their feed cursor, badge state; RedisKeys.inactiveUserKeys): their
   * next visit starts afresh. A user seen again in between is kept; so is a user online through
   * presence at that time, who counts as seen at `now`. Appends a `marks` event for each user dropped, before the last-seen index
   * forgets them, so a run that failed in between drops and logs them again. Returns the users
   * dropped.
   */
  dropInactive(before: number, limit: number, now: number): Promise<string[]>;
}

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

/** Changes every core follows, beside the posts: they concern users of every pool. */
export type SharedEvent =
  | { kind: 'notice'; id: number; live: boolean }
  | { kind: 'reddot'; name: string; ts: number | null }
  | { kind: 'messages'; conversation: string; maxSeq: number; senders: Record<string, number> };

/** One interaction event (docs/semantics.md, "Interaction counters"). */
export interface CounterEvent {
  user: string;
  kind: string;
  id: string;
}

/** A user's counts per kind, and the store's time they were counted at. */
export interface CounterCounts {
  /** kind → count, non-zero kinds only. */
  counts: Record<string, number>;
  /**
   * The watermark of these counts (ms on the store's clock): every event counted here is
   * stamped at or before it, every event not counted after it, so a read with `upTo` = asOf
   * clears what was counted and nothing it missed. (Redis counts three kinds per atomic step:
   * with more kinds, an event arriving between two steps may be left for the next read.) Null
   * for a user with no counter state (nothing was written for them).
   */
  asOf: number | null;
}

/**
 * Interaction counters, per user under the user's hash tag: a cursor per kind, the events of
 * each kind stamped with their arrival on the store's clock, and the retracted ids, all
 * forgotten after `windowMs` (BUBBLE_INACTIVE_DAYS). Each call is atomic per user; O(1) keys
 * written per event.
 */
export interface InteractionCounters {
  /**
   * Stores each event not stored or retracted within the window, stamped
   * max(now, the user's last stamp + 1, the kind's readAt + 1, the last count + 1). A repeated
   * or retracted one is ignored (also within the batch).
   */
  ingest(
    events: readonly CounterEvent[],
    windowMs: number,
  ): Promise<{ accepted: number; ignored: number }>;
  /** The event no longer counts, and a later ingest of it is ignored; false when not stored. */
  retract(event: CounterEvent, windowMs: number): Promise<boolean>;
  /**
   * readAt(k) := max(readAt, min(upTo, now')) for each kind, without upTo now', where now' is
   * max(now, the user's last stamp): every event stored so far.
   */
  read(user: string, kinds: readonly string[], upTo: number | undefined): Promise<void>;
  /** counter(u, k) of each kind, atomically, and the store time it is as of. */
  counts(user: string, kinds: readonly string[], windowMs: number): Promise<CounterCounts>;
  /** Forgets every event, cursor and retracted id of the users (the inactive-user job). */
  dropUsers(users: readonly string[]): Promise<void>;
}
