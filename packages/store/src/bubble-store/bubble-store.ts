import type { Clock } from '@bubble/protocol';
import type { BadgeStates } from '../badges/badge-states.js';
import type { ChangeLog } from '../change-log/change-log.js';
import type { Conversations } from '../conversations/conversations.js';
import type { Coordination } from '../coordination/coordination.js';
import type { CounterCounts, InteractionCounters } from '../counters/counters.js';
import type { FencedBadges } from '../fenced-badges/fenced-badges.js';
import type { FollowGraph } from '../follows/follow-graph.js';
import type { UserSources } from '../follows/user-sources.js';
import type { UserMarks, UserMarksState } from '../marks/user-marks.js';
import type { NoticeBoard } from '../notices/notice-board.js';
import type { PostIndex } from '../posts/post-index.js';
import type { PresenceStore } from '../presence/presence.js';
import type { ReadCursors } from '../cursors/read-cursors.js';
import type { RedDots } from '../red-dots/red-dots.js';
import type { ClockListeners } from '../store-clock.js';

/**
 * What the feed bubble needs from storage, as small interfaces. Each lives in its component's
 * folder beside its in-memory implementation and its Redis one (memory-*.ts, redis-*.ts);
 * test/contract proves them equal.
 */

/** Everything that describes one user's feed computation, read in one batch. */
export interface FeedInputs {
  follows: string[];
  topics: string[];
  readAt: number | null;
  /**
   * Whether the user's sources are held (UserSources): always true without a sources endpoint;
   * false means follows and topics are empty because bubble does not know them, not because the
   * user follows nobody.
   */
  held: boolean;
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

export interface BubbleStore {
  readonly engine: 'memory' | 'redis';
  readonly pools: number;
  readonly follows: FollowGraph;
  /** The topics each user follows: the same interface, topic names in place of authors. */
  readonly topics: FollowGraph;
  /** Whether each user's follows and topics are held, and the install of the platform's answer. */
  readonly sources: UserSources;
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
  /** Follows, topic follows, read cursor and held of one user, fetched together (one slot). */
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
