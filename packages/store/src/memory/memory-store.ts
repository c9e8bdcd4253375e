import { BubbleError, type BadgeFields, type Clock, type StoredBadge } from '@bubble/protocol';
import type {
  BadgeStamp,
  BadgeStateWrite,
  BadgeStates,
  BubbleStore,
  FeedInputs,
  UserInputs,
  FollowGraph,
  FollowOutcome,
  IngestResult,
  Post,
  PostIndex,
  ReadCursors,
  TopicPost,
  WindowPost,
} from '../types.js';
import { countsInTopicWindow, parseTopicMember, topicMember } from '../topic-windows.js';
import { MemoryChangeLog } from './memory-change-log.js';
import {
  MemoryConversations,
  MemoryNoticeBoard,
  MemoryRedDots,
  MemoryUserMarks,
} from './memory-extras.js';
import { MemoryCoordination } from './memory-coordination.js';
import { MemoryCounters } from './memory-counters.js';
import { MemoryFencedBadges } from './memory-fenced-badges.js';
import { MemoryPresence } from './memory-presence.js';
import { SortedPosts } from './sorted-posts.js';

/**
 * The embedded engine: all state in this process, same semantics as the Redis engine.
 * Methods are async to share the interfaces, but each one runs to completion without
 * yielding, which is what makes its compound operations atomic.
 */
export interface MemoryStoreOptions {
  pools?: number;
  /** The store's clock (BubbleStore.clock): leases, presence, routes, node liveness; default Date.now. */
  now?: () => number;
}

export class MemoryStore implements BubbleStore {
  readonly engine = 'memory' as const;
  readonly pools: number;
  readonly clock: Clock;
  readonly follows: MemoryFollowGraph;
  readonly topics: MemoryFollowGraph;
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
    this.follows = new MemoryFollowGraph('authors');
    this.topics = new MemoryFollowGraph('topics');
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

  /**
   * What the inactive-user job drops for a user beside their marks (the Redis engine's
   * RedisKeys.inactiveUserKeys and the pool fields beside them): state kept for them alone,
   * except follows, topic follows, memberships and conversation cursors. A new per-user part
   * of that lifecycle is forgotten here.
   */
  private forgetInactiveUser(user: string): void {
    this.cursors.forget(user);
    this.badgeStates.delete(user);
    this.offlineSince.delete(user);
    this.fencedBadges.forgetRoutes(user);
  }

  /**
   * The parts of this store holding something for `user` alone (introspection for tests and
   * tools, as SCAN is on Redis): 'follows', 'topics', 'counters', 'memberships', 'marks', 'lastseen', 'cursors',
   * 'badge', 'offline', 'presence', 'routes'.
   */
  heldFor(user: string): string[] {
    const held: string[] = [];
    if (this.follows.holds(user)) held.push('follows');
    if (this.topics.holds(user)) held.push('topics');
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
    const [follows, topics, readAt] = await Promise.all([
      this.follows.list(user),
      this.topics.list(user),
      this.cursors.feedReadAt(user),
    ]);
    return { follows, topics, readAt };
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

class MemoryFollowGraph implements FollowGraph {
  private readonly byUser = new Map<string, Set<string>>();

  /** What is followed, for the cap's message: authors or topics. */
  constructor(private readonly noun: string) {}

  async follow(user: string, author: string, cap: number): Promise<FollowOutcome> {
    let set = this.byUser.get(user);
    if (set?.has(author)) return 'exists';
    if ((set?.size ?? 0) >= cap) {
      throw new BubbleError('UB_ERR_FOLLOW_CAP', `a user may follow at most ${cap} ${this.noun}`);
    }
    if (!set) this.byUser.set(user, (set = new Set()));
    set.add(author);
    return 'added';
  }

  async unfollow(user: string, author: string): Promise<boolean> {
    const set = this.byUser.get(user);
    if (!set?.delete(author)) return false;
    if (set.size === 0) this.byUser.delete(user);
    return true;
  }

  async replace(user: string, authors: readonly string[]): Promise<void> {
    if (authors.length === 0) this.byUser.delete(user);
    else this.byUser.set(user, new Set(authors));
  }

  async list(user: string): Promise<string[]> {
    return [...(this.byUser.get(user) ?? [])];
  }

  holds(user: string): boolean {
    return this.byUser.has(user);
  }
}

/** Stores and logs in one synchronous step, as the Redis scripts do on one server. */
class MemoryPostIndex implements PostIndex {
  private readonly byAuthor = new Map<string, SortedPosts>();
  /** author → (post id → the time the tombstone may be forgotten after). */
  private readonly deleted = new Map<string, Map<string, number>>();
  /** author → (post id → its topics), for the stored posts that carry topics. */
  private readonly topicsOf = new Map<string, Map<string, readonly string[]>>();
  /** topic → its window, members as topicMember() writes them. */
  private readonly byTopic = new Map<string, SortedPosts>();

  constructor(private readonly log: MemoryChangeLog) {}

  async ingest(posts: readonly Post[], minTs: number): Promise<IngestResult> {
    let accepted = 0;
    let ignored = 0;
    const stored: Post[] = [];
    const touched = new Set<string>();
    for (const post of posts) {
      touched.add(post.author);
      if (post.ts <= minTs || this.isDeleted(post.author, post.id, minTs)) {
        ignored++;
        continue;
      }
      let sorted = this.byAuthor.get(post.author);
      if (!sorted) this.byAuthor.set(post.author, (sorted = new SortedPosts()));
      if (sorted.add(post.id, post.ts)) {
        const topics = post.topics ?? [];
        if (topics.length > 0) this.storeTopics(post.author, post.id, post.ts, topics, minTs);
        stored.push(
          topics.length > 0
            ? { author: post.author, id: post.id, ts: post.ts, topics: [...topics] }
            : { author: post.author, id: post.id, ts: post.ts },
        );
      }
      accepted++;
    }
    for (const author of touched) this.trim(author, minTs);
    this.log.appendPostEventsNow(
      stored.map(({ topics, ...post }) =>
        topics ? { kind: 'post', ...post, topics: [...topics] } : { kind: 'post', ...post },
      ),
    );
    return { accepted, ignored, stored };
  }

  async remove(author: string, id: string, now: number, minTs: number): Promise<number | null> {
    const sorted = this.byAuthor.get(author);
    const ts = sorted?.tsOf(id);
    sorted?.remove(id);
    if (ts !== undefined) this.dropTopics(author, id);
    let tombs = this.deleted.get(author);
    if (!tombs) this.deleted.set(author, (tombs = new Map()));
    // A repeated delete must not shorten the tombstone a post stamped ahead of `now` got.
    tombs.set(id, Math.max(tombs.get(id) ?? now, ts ?? now, now));
    this.trim(author, minTs);
    if (ts === undefined) return null;
    this.log.appendPostEventsNow([{ kind: 'delete', author, id, ts }]);
    return ts;
  }

  async window(authors: readonly string[], afterTs: number): Promise<Map<string, WindowPost[]>> {
    const out = new Map<string, WindowPost[]>();
    for (const author of authors) out.set(author, this.byAuthor.get(author)?.after(afterTs) ?? []);
    return out;
  }

  async topicWindow(topics: readonly string[], afterTs: number): Promise<Map<string, TopicPost[]>> {
    const out = new Map<string, TopicPost[]>();
    for (const topic of topics) {
      const posts = this.byTopic.get(topic)?.after(afterTs) ?? [];
      out.set(
        topic,
        posts.map((post) => parseTopicMember(post.id, post.ts)),
      );
    }
    return out;
  }

  async countBetween(
    authors: readonly string[],
    afterTs: number,
    untilTs: number,
    topics: readonly string[] = [],
  ): Promise<number> {
    let total = 0;
    for (const author of authors) {
      total += this.byAuthor.get(author)?.countBetween(afterTs, untilTs) ?? 0;
    }
    if (topics.length === 0 || untilTs <= afterTs) return total;
    const followed = new Set(authors);
    const topicSet = new Set(topics);
    for (const topic of topicSet) {
      for (const post of this.byTopic.get(topic)?.after(afterTs) ?? []) {
        if (post.ts > untilTs) break;
        if (countsInTopicWindow(post.id, topic, followed, topicSet)) total++;
      }
    }
    return total;
  }

  private storeTopics(
    author: string,
    id: string,
    ts: number,
    topics: readonly string[],
    minTs: number,
  ): void {
    let byId = this.topicsOf.get(author);
    if (!byId) this.topicsOf.set(author, (byId = new Map()));
    byId.set(id, topics);
    const member = topicMember(author, id, topics);
    for (const topic of topics) {
      let window = this.byTopic.get(topic);
      if (!window) this.byTopic.set(topic, (window = new SortedPosts()));
      window.add(member, ts);
      window.trimThrough(minTs);
      if (window.size === 0) this.byTopic.delete(topic);
    }
  }

  /** Takes a removed post out of its topics' windows. */
  private dropTopics(author: string, id: string): void {
    const byId = this.topicsOf.get(author);
    const topics = byId?.get(id);
    if (!byId || !topics) return;
    byId.delete(id);
    if (byId.size === 0) this.topicsOf.delete(author);
    const member = topicMember(author, id, topics);
    for (const topic of topics) {
      const window = this.byTopic.get(topic);
      window?.remove(member);
      if (window?.size === 0) this.byTopic.delete(topic);
    }
  }

  private isDeleted(author: string, id: string, minTs: number): boolean {
    const until = this.deleted.get(author)?.get(id);
    return until !== undefined && until > minTs;
  }

  private trim(author: string, minTs: number): void {
    const sorted = this.byAuthor.get(author);
    if (sorted) {
      const byId = this.topicsOf.get(author);
      for (const id of sorted.trimThrough(minTs)) if (byId) this.dropTopics(author, id);
      if (sorted.size === 0) this.byAuthor.delete(author);
    }
    const tombs = this.deleted.get(author);
    if (tombs) {
      for (const [id, until] of tombs) if (until <= minTs) tombs.delete(id);
      if (tombs.size === 0) this.deleted.delete(author);
    }
  }
}

class MemoryReadCursors implements ReadCursors {
  private readonly feed = new Map<string, number>();

  async feedReadAt(user: string): Promise<number | null> {
    return this.feed.get(user) ?? null;
  }

  async advanceFeedReadAt(user: string, to: number): Promise<number> {
    const next = Math.max(this.feed.get(user) ?? -Infinity, to);
    this.feed.set(user, next);
    return next;
  }

  forget(user: string): void {
    this.feed.delete(user);
  }

  holds(user: string): boolean {
    return this.feed.has(user);
  }
}

class MemoryBadgeStates implements BadgeStates {
  constructor(
    private readonly byUser: Map<string, StoredBadge>,
    private readonly writer: MemoryFencedBadges,
    private readonly offlineSince: Map<string, number>,
    private readonly presence: MemoryPresence,
  ) {}

  async expireOffline(before: number, limit: number): Promise<number> {
    // Oldest first, ties by name, at most `limit` looked at: the Redis engine's walk, one index.
    const due = [...this.offlineSince]
      .filter(([, since]) => since <= before)
      .sort((a, b) => a[1] - b[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
      .slice(0, limit);
    let expired = 0;
    for (const [user] of due) {
      if (this.presence.isOnlineNow(user)) {
        this.offlineSince.delete(user);
        continue;
      }
      const stored = this.byUser.get(user);
      if (stored && stored.computedAt > before) {
        this.offlineSince.set(user, stored.computedAt);
        continue;
      }
      if (stored) expired++;
      this.byUser.delete(user);
      this.offlineSince.delete(user);
    }
    return expired;
  }

  async load(user: string): Promise<StoredBadge | null> {
    const stored = this.byUser.get(user);
    return stored ? { ...stored, fields: { ...stored.fields } } : null;
  }

  async save(user: string, fields: BadgeFields, computedAt: number): Promise<BadgeStamp> {
    const stamp = await this.writer.saveUnfenced(user, fields, computedAt);
    // Ages from now unless it already does, or the user is online (going offline writes it).
    if (!this.offlineSince.has(user) && !this.presence.isOnlineNow(user)) {
      this.offlineSince.set(user, computedAt);
    }
    return stamp;
  }

  async saveMany(writes: readonly BadgeStateWrite[]): Promise<BadgeStamp[]> {
    const stamps: BadgeStamp[] = [];
    for (const { user, fields, computedAt } of writes) {
      stamps.push(await this.save(user, fields, computedAt));
    }
    return stamps;
  }
}
