import type { Clock, StoredBadge } from '@bubble/protocol';
import { MemoryBadgeStates } from '../badges/memory-badge-states.js';
import type { BadgeStates } from '../badges/badge-states.js';
import { MemoryChangeLog } from '../change-log/memory-change-log.js';
import { MemoryConversations } from '../conversations/memory-conversations.js';
import { MemoryCoordination } from '../coordination/memory-coordination.js';
import { MemoryCounters } from '../counters/memory-counters.js';
import { MemoryReadCursors } from '../cursors/memory-read-cursors.js';
import { MemoryFencedBadges } from '../fenced-badges/memory-fenced-badges.js';
import { MemoryFollowGraph } from '../follows/memory-follow-graph.js';
import { MemorySourcesBook } from '../follows/memory-sources-book.js';
import { MemoryUserSources } from '../follows/memory-user-sources.js';
import { MemoryUserMarks } from '../marks/memory-user-marks.js';
import { MemoryNoticeBoard } from '../notices/memory-notice-board.js';
import { MemoryPostIndex } from '../posts/memory-post-index.js';
import type { PostIndex } from '../posts/post-index.js';
import { MemoryPresence } from '../presence/memory-presence.js';
import { MemoryRedDots } from '../red-dots/memory-red-dots.js';
import type { BubbleStore, FeedInputs, UserInputs } from './bubble-store.js';

/**
 * The embedded engine: all state in this process, same semantics as the Redis engine.
 * Methods are async to share the interfaces, but each one runs to completion without
 * yielding, which is what makes its compound operations atomic.
 */
export interface MemoryStoreOptions {
  pools?: number;
  /** The store's clock (BubbleStore.clock): leases, presence, routes, node liveness; default Date.now. */
  now?: () => number;
  /**
   * A sources endpoint gives users' follows on demand (UserSources): follow changes of a user
   * not held store nothing, and the inactive-user drop drops follows too. Default false.
   */
  sourcesOnDemand?: boolean;
}

export class MemoryStore implements BubbleStore {
  readonly engine = 'memory' as const;
  readonly pools: number;
  readonly clock: Clock;
  readonly follows: MemoryFollowGraph;
  readonly topics: MemoryFollowGraph;
  readonly sources: MemoryUserSources;
  readonly posts: PostIndex;
  readonly cursors: MemoryReadCursors;
  readonly badges: BadgeStates;
  readonly changes: MemoryChangeLog;
  readonly presence: MemoryPresence;
  readonly coordination: MemoryCoordination;
  readonly fencedBadges: MemoryFencedBadges;
  readonly notices: MemoryNoticeBoard;
  readonly reddots: MemoryRedDots;
  readonly marks: MemoryUserMarks;
  readonly conversations: MemoryConversations;
  readonly counters: MemoryCounters;

  constructor(options: MemoryStoreOptions = {}) {
    this.pools = options.pools ?? 100;
    const now = options.now ?? Date.now;
    this.clock = { now };
    const badgeStates = new Map<string, StoredBadge>();
    const offlineSince = new Map<string, number>();
    this.changes = new MemoryChangeLog();
    const book = new MemorySourcesBook(options.sourcesOnDemand ?? false, now);
    this.sourcesBook = book;
    this.follows = new MemoryFollowGraph(book, 'a', 'authors');
    this.topics = new MemoryFollowGraph(book, 't', 'topics');
    this.posts = new MemoryPostIndex(this.changes);
    this.cursors = new MemoryReadCursors();
    this.notices = new MemoryNoticeBoard(this.changes);
    this.reddots = new MemoryRedDots(this.changes);
    this.conversations = new MemoryConversations(this.changes, this.pools);
    const presence = new MemoryPresence({
      pools: this.pools,
      log: this.changes,
      now,
      offlineSince,
    });
    this.presence = presence;
    this.marks = new MemoryUserMarks(this.changes, this.pools, {
      isOnline: (user) => presence.isOnlineNow(user),
      forget: (user) => this.forgetInactiveUser(user),
    });
    this.counters = new MemoryCounters(now);
    this.sources = new MemoryUserSources(book, {
      cursors: this.cursors,
      marks: this.marks,
      feedInputs: (user) => this.feedInputs(user),
    });
    this.coordination = new MemoryCoordination({ now });
    const coordination = this.coordination;
    this.fencedBadges = new MemoryFencedBadges({
      pools: this.pools,
      badges: badgeStates,
      currentFence: (pool) => coordination.fenceNow(pool),
      retireFence: (pool, seen) => coordination.retireFence(pool, seen),
      now,
    });
    this.badges = new MemoryBadgeStates(badgeStates, this.fencedBadges, offlineSince, presence);
    this.badgeStates = badgeStates;
    this.offlineSince = offlineSince;
  }

  private readonly badgeStates: Map<string, StoredBadge>;
  private readonly offlineSince: Map<string, number>;
  private readonly sourcesBook: MemorySourcesBook;

  /**
   * What the inactive-user job drops for a user beside their marks (the Redis engine's
   * RedisKeys.inactiveUserKeys and the pool fields beside them): state kept for them alone,
   * except memberships and conversation cursors, and follows and topic follows unless they come
   * back on demand. A new per-user part of that lifecycle is forgotten here.
   */
  private forgetInactiveUser(user: string): void {
    if (this.sources.onDemand) this.sourcesBook.forget(user);
    this.cursors.forget(user);
    this.badgeStates.delete(user);
    this.offlineSince.delete(user);
    this.fencedBadges.forgetRoutes(user);
  }

  /**
   * The parts of this store holding something for `user` alone (introspection for tests and
   * tools, as SCAN is on Redis): 'follows', 'topics', 'fetch', 'counters', 'memberships',
   * 'marks', 'lastseen', 'cursors', 'badge', 'offline', 'presence', 'routes'.
   */
  heldFor(user: string): string[] {
    const held = this.sourcesBook.holds(user);
    if (this.counters.holds(user)) held.push('counters');
    if (this.conversations.holds(user)) held.push('memberships');
    held.push(...this.marks.holds(user));
    if (this.cursors.holds(user)) held.push('cursors');
    if (this.badgeStates.has(user)) held.push('badge');
    if (this.offlineSince.has(user)) held.push('offline');
    if (this.presence.holds(user)) held.push('presence');
    if (this.fencedBadges.hasRoutes(user)) held.push('routes');
    return held;
  }

  /** This process's clock is the store's. */
  async syncClock(): Promise<void> {}

  /** Nothing goes over a wire. */
  commandsSent(): number {
    return 0;
  }

  async feedInputs(user: string): Promise<FeedInputs> {
    const held = this.sourcesBook.held(user);
    const [follows, topics, readAt] = await Promise.all([
      this.follows.list(user),
      this.topics.list(user),
      this.cursors.feedReadAt(user),
    ]);
    return { follows, topics, readAt, held };
  }

  async userInputs(
    users: readonly string[],
    { kinds, windowMs }: { kinds: readonly string[]; windowMs: number },
  ): Promise<UserInputs[]> {
    return Promise.all(
      users.map(async (user) => {
        const [feed, marks, [seqs], counters] = await Promise.all([
          this.feedInputs(user),
          this.marks.state(user),
          this.conversations.membershipSeqs([user]),
          this.counters.counts(user, kinds, windowMs),
        ]);
        return { feed, marks, conversations: seqs!.map((m) => m.conversation), counters };
      }),
    );
  }

  async ping(): Promise<void> {}

  async close(): Promise<void> {}
}
