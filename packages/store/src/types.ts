import type {
  Conversations,
  CounterCounts,
  InteractionCounters,
  NoticeBoard,
  RedDots,
  UserMarks,
  UserMarksState,
} from './extras-types.js';
import type { ChangeLog, Coordination, FencedBadges, PresenceStore } from './cluster-types.js';
import type { BadgeFields, Clock, StoredBadge } from '@bubble/protocol';
import type { ClockListeners } from './store-clock.js';

/**
 * What the feed bubble needs from storage, as small interfaces. Each has an in-memory
 * implementation (memory/) and a Redis one (redis/); test/contract proves them equal.
 */

export interface Post {
  author: string;
  id: string;
  ts: number;
  /** Topic names (≤ 10, de-duplicated, in the order given); absent or empty for none. */
  topics?: readonly string[];
}

export interface IngestResult {
  /** Posts now stored, including ones that were stored already (ingest is idempotent). */
  accepted: number;
  /** Posts older than the lookback window, or deleted before: not stored. */
  ignored: number;
  /** The posts this call stored for the first time, in input order. */
  stored: Post[];
}

export type FollowOutcome = 'added' | 'exists';

export interface FollowGraph {
  /** Throws UB_ERR_FOLLOW_CAP when `user` already follows `cap` authors. */
  follow(user: string, author: string, cap: number): Promise<FollowOutcome>;
  unfollow(user: string, author: string): Promise<boolean>;
  /** Replaces the whole set atomically. `authors` must be de-duplicated and within the cap. */
  replace(user: string, authors: readonly string[]): Promise<void>;
  list(user: string): Promise<string[]>;
}

export interface PostIndex {
  /**
   * Stores each post unless it is at or before `minTs` (outside the lookback) or was deleted.
   * The first stored ts of an (author, id) wins. Entries at or before `minTs` are trimmed.
   * Appends a `post` event for each post stored now to the post log: in the same step on one
   * Redis and in memory; on Redis Cluster right after, and a retry of a call that failed in
   * between appends what that call stored (docs/architecture.md, the write path).
   */
  ingest(posts: readonly Post[], minTs: number): Promise<IngestResult>;
  /**
   * Deletes a post, known or not, and remembers the deletion for the lookback window so a
   * late or retried ingest cannot bring it back. Returns the ts of the post it removed, and
   * logs its `delete` event as ingest logs posts (on Redis Cluster a retry of a delete whose
   * event was not logged returns the ts again and logs it).
   */
  remove(author: string, id: string, now: number, minTs: number): Promise<number | null>;
  /**
   * Number of stored posts with afterTs < ts ≤ untilTs by any of `authors` or carrying any of
   * `topics`, each post once (topic-windows.ts), in one batch.
   */
  countBetween(
    authors: readonly string[],
    afterTs: number,
    untilTs: number,
    topics?: readonly string[],
  ): Promise<number>;
  /** Each author's stored posts with ts > afterTs, ordered by ts; one batch for all authors. */
  window(authors: readonly string[], afterTs: number): Promise<Map<string, WindowPost[]>>;
  /** Each topic's stored posts with ts > afterTs, ordered by ts; one batch for all topics. */
  topicWindow(topics: readonly string[], afterTs: number): Promise<Map<string, TopicPost[]>>;
}

/** A post in a topic's window: who wrote it and every topic it carries. */
export interface TopicPost {
  author: string;
  id: string;
  ts: number;
  topics: string[];
}

export interface WindowPost {
  id: string;
  ts: number;
}

export interface ReadCursors {
  /** The feed read cursor, or null before the user's first read. */
  feedReadAt(user: string): Promise<number | null>;
  /** readAt := max(readAt, to); returns the cursor after the move. */
  advanceFeedReadAt(user: string, to: number): Promise<number>;
}

/** Everything that describes one user's feed computation, read in one batch. */
export interface FeedInputs {
  follows: string[];
  topics: string[];
  readAt: number | null;
}

/**
 * What a cold start reads of a user's own keys: their feed inputs, their marks, their
 * conversation index (the ids membershipSeqs starts from) and their interaction counters' counts.
 */
export interface UserInputs {
  feed: FeedInputs;
  marks: UserMarksState;
  conversations: string[];
  counters: CounterCounts;
}

export interface BadgeStamp {
  epoch: string;
  version: number;
  /** True when this save changed the stored state (and so bumped the version). */
  changed: boolean;
}

/** One save() of saveMany. */
export interface BadgeStateWrite {
  user: string;
  fields: BadgeFields;
  computedAt: number;
}

export interface BadgeStates {
  load(user: string): Promise<StoredBadge | null>;
  /**
   * Stores `fields` as the user's badge state. When they differ from what is stored the version
   * moves to the next one; a user with no stored state gets a fresh epoch.
   */
  save(user: string, fields: BadgeFields, computedAt: number): Promise<BadgeStamp>;
  /**
   * save() of every write, stamps in input order, in one call per pool and computedAt instead
   * of one per user (offline delivery's batches). A user written twice is saved in order.
   */
  saveMany(writes: readonly BadgeStateWrite[]): Promise<BadgeStamp[]>;
  /**
   * Deletes the stored states of users offline since `before` or earlier (docs/semantics.md,
   * Lifecycle: after BUBBLE_LOOKBACK_DAYS), looking at most `limit` users per pool: a user
   * online again is kept, a state written after `before` (a poll) ages from that write. The
   * next computation for them starts a new epoch. Returns the number of states deleted.
   */
  expireOffline(before: number, limit: number): Promise<number>;
}

export interface BubbleStore {
  readonly engine: 'memory' | 'redis';
  readonly pools: number;
  readonly follows: FollowGraph;
  /** The topics each user follows: the same interface, topic names in place of authors. */
  readonly topics: FollowGraph;
  readonly posts: PostIndex;
  readonly cursors: ReadCursors;
  readonly badges: BadgeStates;
  readonly changes: ChangeLog;
  readonly presence: PresenceStore;
  readonly coordination: Coordination;
  readonly fencedBadges: FencedBadges;
  readonly notices: NoticeBoard;
  readonly reddots: RedDots;
  readonly marks: UserMarks;
  readonly conversations: Conversations;
  readonly counters: InteractionCounters;
  /**
   * The store's clock, which every role computes its times on (a sweep's now, a read's cursor,
   * a post's lookback) so that they agree across hosts: the memory engine's is this process's
   * clock; the Redis engine's follows the server's TIME once syncClock() ran. Presence, routes
   * and node liveness are decided by the store itself, on the same clock.
   */
  readonly clock: Clock;
  /**
   * Keeps `clock` in step with the store until close(): one sample now (the Redis engine reads
   * TIME), then one every few seconds. Resolves after the first.
   */
  syncClock(listeners?: ClockListeners): Promise<void>;
  /** Follows, topic follows and read cursor of one user, fetched together (one slot). */
  feedInputs(user: string): Promise<FeedInputs>;
  /**
   * feedInputs, marks.state, the conversation index and counters.counts(user, kinds, windowMs)
   * of every user, in input order: a batch of cold starts (offline delivery's senders). One call
   * per user on Redis (the keys share the user's hash tag), its counts one atomic step.
   */
  userInputs(
    users: readonly string[],
    counters: { kinds: readonly string[]; windowMs: number },
  ): Promise<UserInputs[]>;
  /**
   * Commands sent to Redis since the store was made, each command of a pipeline or transaction
   * counted (0 for the memory engine): what a caller's work cost, read before and after it.
   */
  commandsSent(): number;
  /** Resolves when the backing store answers. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export type * from './cluster-types.js';
export type * from './extras-types.js';
