import { Arrivals } from './feed/arrivals.js';
import { AuthorPosts } from './feed/author-posts.js';
import { AuthorWindows, type WindowPost } from './feed/author-windows.js';
import { ChangeListing, type ChangedCounts } from './feed/change-listing.js';
import { FollowArena } from './feed/follow-arena.js';
import { IdRoom } from './feed/id-room.js';
import { TopicFollows } from './feed/topic-follows.js';
import { TopicPosts, type TopicWindowPost } from './feed/topic-posts.js';
import { TopicRecords } from './feed/topic-records.js';
import { UserCounts } from './feed/user-counts.js';
import { InternTable, idHash } from './intern-table.js';

export type { TopicWindowPost };

/**
 * The feed bubble of every user a core holds, kept exact incrementally.
 *
 * For each held user u it maintains
 *     count[u] = #{ posts p of authors u follows : max(readAt[u], T − L) < ts(p) ≤ T }
 * at the time T of the last advanceTo(). Posts live in per-author sorted windows (ts > T − L);
 * a reverse index (author → followers) turns a new post, a delete, a post becoming due
 * (ts reached) or expiring (ts left the lookback) into one walk over that author's followers.
 * Nothing here walks users × follows except recompute(), which is per user and used only when
 * that user's own inputs change.
 *
 * Topics: a post carrying a topic some held user follows gets a record. While a post has a
 * record, the record walks it, not its author's window: one walk over the followers of its
 * author and of each of its topics, a user counted once through a per-walk stamp. A user u
 * counts a record in topic t's window only when u does not follow its author and t is the first
 * of its topics u follows, so recompute() counts each post once too. Users without topics cost
 * one size check per author walk, nothing more.
 *
 * This class turns names into ids and hands them to its parts (feed/): who follows whom
 * (FollowArena, TopicFollows), the posts held (AuthorWindows, TopicRecords), how they reach
 * users (AuthorPosts, TopicPosts), the moments waited for (Arrivals), the counts (UserCounts)
 * and the counts handed out (ChangeListing).
 */
export class FeedCounter {
  readonly users = new InternTable();
  readonly authors = new InternTable();
  readonly topics = new InternTable();
  private readonly lookbackMs: number;
  private now = -Infinity;
  /** Users released (releaseUser) but still in follower lists, and their follows. */
  private readonly releasing: number[] = [];
  private releasingFollows = 0;
  private readonly arrivals = new Arrivals();
  private readonly arena = new FollowArena();
  private readonly topicFollows = new TopicFollows();
  private readonly windows = new AuthorWindows(this.arrivals);
  private readonly records = new TopicRecords(
    this.authors,
    this.topics,
    this.arena.followers,
    this.topicFollows.followers,
    this.arrivals,
  );
  private readonly ids = new IdRoom(
    this.authors,
    this.topics,
    this.arena,
    this.topicFollows,
    this.windows,
    this.records,
  );
  private readonly counts = new UserCounts(
    this.arena,
    this.topicFollows,
    this.windows,
    this.records,
  );
  private readonly topicPosts = new TopicPosts(
    this.ids,
    this.topics,
    this.topicFollows,
    this.records,
    this.counts,
  );
  private readonly authorPosts = new AuthorPosts(this.windows, this.counts, this.topicPosts);
  private readonly changes = new ChangeListing();

  constructor(options: { lookbackMs: number }) {
    this.lookbackMs = options.lookbackMs;
  }

  get time(): number {
    return this.now;
  }

  get userCount(): number {
    return this.users.size;
  }

  get trackedAuthorCount(): number {
    return this.authors.size;
  }

  /** Topics some held user follows. */
  get trackedTopicCount(): number {
    return this.topics.size;
  }

  /** Posts that reach users through a topic (records), for metrics and tests. */
  get topicPostCount(): number {
    return this.records.size;
  }

  /** Follows (and topic follows) of released users still in follower lists. */
  get unreclaimedFollows(): number {
    return this.releasingFollows;
  }

  hasUser(user: string): boolean {
    return this.users.idOf(user) !== undefined;
  }

  countOf(user: string): number | undefined {
    const u = this.users.idOf(user);
    return u === undefined ? undefined : this.counts.count[u];
  }

  readAtOf(user: string): number | null {
    const u = this.users.idOf(user);
    const at = u === undefined ? -Infinity : this.counts.readAt[u]!;
    return at === -Infinity ? null : at;
  }

  followsOf(user: string): string[] {
    const u = this.users.idOf(user);
    if (u === undefined) return [];
    const { followStart, followLen, followAuthor } = this.arena;
    const names: string[] = [];
    for (let k = followStart[u]!; k < followStart[u]! + followLen[u]!; k++) {
      names.push(this.authors.nameOf(followAuthor[k]!));
    }
    return names;
  }

  topicsOf(user: string): string[] {
    const u = this.users.idOf(user);
    const topics = u === undefined ? undefined : this.topicFollows.userTopics[u];
    return topics ? Array.from(topics, (t) => this.topics.nameOf(t)) : [];
  }

  /** Users whose count differs from the one last handed out, with their counts. */
  takeChanged(): ChangedCounts {
    return this.changes.take(this.counts.count, this.counts.held, this.users.capacity);
  }

  /** Records that `count` is what the user's stored badge already shows. */
  markReported(user: string, count: number): void {
    const u = this.users.idOf(user);
    if (u !== undefined) this.changes.markReported(u, count);
  }

  /** Names of takeChanged() ids. */
  nameAt(id: number): string {
    return this.users.nameOf(id);
  }

  /**
   * Moves the counter's clock to T: posts whose ts has come count from now on, posts that left
   * the lookback stop counting. Time never moves back.
   */
  advanceTo(time: number): void {
    if (time <= this.now) return;
    const previous = this.now;
    this.now = time;
    const horizon = time - this.lookbackMs;
    this.authorPosts.advance(this.arrivals, time, previous, horizon);
    this.topicPosts.advance(this.arrivals, time, previous, horizon);
  }

  /**
   * Adds or replaces a user. Returns the authors whose posts must be loaded (loadAuthor) before
   * the user's count is right; recompute() the user afterwards.
   */
  setUser(user: string, follows: readonly string[], readAt: number | null): string[] {
    const fresh = this.users.idOf(user) === undefined;
    const u = this.users.intern(user);
    if (!this.counts.hasRoomFor(u + 1)) {
      this.counts.ensureUserCapacity(u + 1);
      this.arena.ensureUserCapacity(u + 1);
      this.changes.ensureUserCapacity(u + 1);
    }
    this.counts.readAt[u] = readAt ?? -Infinity;
    if (fresh) this.changes.unreported(u);
    this.counts.held[u] = 1;
    return this.setFollowsOf(u, follows);
  }

  /** Replaces the user's follow set; returns authors to load, as setUser. */
  setFollows(user: string, follows: readonly string[]): string[] {
    const u = this.users.idOf(user);
    return u === undefined ? [] : this.setFollowsOf(u, follows);
  }

  /** readAt := max(readAt, at), then the count is recomputed. */
  advanceReadAt(user: string, at: number): void {
    const u = this.users.idOf(user);
    if (u === undefined || at <= this.counts.readAt[u]!) return;
    this.counts.readAt[u] = at;
    this.counts.recomputeAt(u, this.now, this.lookbackMs);
  }

  /** readAt := max(readAt, at), the count left as it is: recompute() the user afterwards. */
  raiseReadAt(user: string, at: number): void {
    const u = this.users.idOf(user);
    if (u !== undefined && at > this.counts.readAt[u]!) this.counts.readAt[u] = at;
  }

  /**
   * Replaces the user's topic follows. Returns the topics whose posts must be loaded
   * (loadTopic) before the user's count is right; recompute() the user afterwards.
   */
  setTopics(user: string, topics: readonly string[]): string[] {
    const u = this.users.idOf(user);
    return u === undefined ? [] : this.setTopicsOf(u, topics);
  }

  /**
   * Fills a topic's window from the stored posts. Posts already known (a record from the change
   * log or another topic) are recognised by (author, ts, id) and not counted twice. The topic's
   * followers must be recomputed afterwards.
   */
  loadTopic(topic: string, posts: readonly TopicWindowPost[]): void {
    const t = this.topics.idOf(topic);
    if (t === undefined || this.topicFollows.followers.count[t] === 0) return;
    if (this.records.topicTracked[t] === 1) return;
    this.topicPosts.load(t, posts, this.now - this.lookbackMs, this.now);
  }

  /**
   * Makes a loaded topic's window equal to the stored posts, repairing a missed post or delete
   * (call after reloading the authors' windows). Returns how many posts it had to add or remove.
   */
  reloadTopic(topic: string, posts: readonly TopicWindowPost[]): number {
    const t = this.topics.idOf(topic);
    if (t === undefined || this.records.topicTracked[t] !== 1) return 0;
    return this.topicPosts.reload(t, posts, this.now, this.lookbackMs);
  }

  /** Whether the topic's stored posts are in its window. */
  isTopicLoaded(topic: string): boolean {
    const t = this.topics.idOf(topic);
    return t !== undefined && this.records.topicTracked[t] === 1;
  }

  /** Removes a user at once: O(their follows + topics). */
  removeUser(user: string): void {
    const u = this.users.idOf(user);
    if (u !== undefined) this.dropId(u);
  }

  /**
   * Lets a user go in O(1), as a sweep does for every user gone offline: the name is free at
   * once (a user coming back gets a new id) and the user is no longer held, counted or reported,
   * but the id stays in the follower lists until reclaim() takes it out, a bounded number of
   * follows per sweep. Taking 50k users of a dead gateway out of 12M follower entries at once
   * was seconds of random memory writes in one sweep.
   */
  releaseUser(user: string): void {
    const u = this.users.idOf(user);
    if (u === undefined) return;
    this.counts.held[u] = 0;
    this.users.detach(u);
    this.releasing.push(u);
    this.releasingFollows += this.arena.lengthOf(u) + this.topicFollows.lengthOf(u);
  }

  /**
   * Takes released users out of the follower lists until about `budget` follows are removed;
   * their ids become free. Returns the follows still to reclaim. A sweep's default: at least
   * RECLAIM_PER_SWEEP, or a 64th of those pending, so even a mass offline is gone in 64.
   */
  reclaim(budget = Math.max(RECLAIM_PER_SWEEP, this.releasingFollows / 64)): number {
    let removed = 0;
    while (removed < budget && this.releasing.length > 0) {
      const u = this.releasing.pop()!;
      const follows = this.arena.lengthOf(u) + this.topicFollows.lengthOf(u);
      this.dropId(u);
      removed += follows;
      this.releasingFollows -= follows;
    }
    return this.releasingFollows;
  }

  /** Authors that are followed but whose posts are not loaded yet. */
  isAuthorLoaded(author: string): boolean {
    const a = this.authors.idOf(author);
    return a !== undefined && this.windows.tracked[a] === 1;
  }

  /**
   * Fills an author's window from the stored posts. Posts already present (from the change log)
   * are recognised by (ts, id) and not counted twice. Followers must be recomputed afterwards.
   */
  loadAuthor(author: string, posts: readonly WindowPost[]): void {
    const a = this.authors.idOf(author);
    if (a === undefined || this.arena.followers.count[a] === 0) return;
    this.windows.tracked[a] = 1;
    this.windows.load(a, posts, this.now - this.lookbackMs, this.now);
  }

  /** Number of posts in the author's window (ts > T − L), or null when not tracked. */
  windowSize(author: string): number | null {
    const a = this.authors.idOf(author);
    return a === undefined ? null : this.windows.size(a);
  }

  /**
   * Makes an author's window equal to the stored posts, repairing a missed post or delete, each
   * through the usual walks. Returns how many posts it had to add or remove.
   */
  reloadAuthor(author: string, posts: readonly WindowPost[]): number {
    const a = this.authors.idOf(author);
    if (a === undefined || this.windows.tracked[a] !== 1) return 0;
    return this.authorPosts.reload(a, author, posts, this.now, this.now - this.lookbackMs);
  }

  /**
   * The user's posts with afterTs < ts ≤ untilTs in the windows held (pending ones included),
   * whatever their count says: what reconciliation compares with the stored posts.
   */
  windowCount(user: string, afterTs: number, untilTs: number): number | undefined {
    const u = this.users.idOf(user);
    return u === undefined ? undefined : this.counts.countWindows(u, afterTs, untilTs);
  }

  /** Recomputes one user from the windows: O(follows × log posts). */
  recompute(user: string): void {
    const u = this.users.idOf(user);
    if (u !== undefined) this.counts.recomputeAt(u, this.now, this.lookbackMs);
  }

  /**
   * A new post from the change log. Ignored unless a held user follows its author or one of
   * its topics. A post with a followed topic gets its record first, so that its author's window
   * leaves the walks to the record.
   */
  addPost(author: string, id: string, ts: number, topics?: readonly string[]): void {
    if (ts <= this.now - this.lookbackMs) return;
    const hash = idHash(id);
    let created = -1;
    if (topics && topics.length > 0 && this.topics.size > 0) {
      created = this.topicPosts.add(author, ts, hash, topics, this.now);
    }
    const a = this.authors.idOf(author);
    if (a !== undefined && this.windows.tracked[a] === 1) {
      this.authorPosts.insert(a, ts, hash, this.now);
    }
    if (created >= 0 && ts <= this.now) this.counts.walkRecord(created, 1);
  }

  deletePost(author: string, id: string, ts: number): void {
    const hash = idHash(id);
    const a = this.authors.idOf(author);
    if (a !== undefined && this.windows.tracked[a] === 1) {
      this.authorPosts.remove(a, ts, hash, this.now);
    }
    this.topicPosts.remove(author, ts, hash, this.now);
  }

  /** Every held user, for reconciliation and pool hand-over. */
  heldUsers(): string[] {
    const out: string[] = [];
    for (let u = 0; u < this.users.capacity; u++) {
      if (this.counts.held[u] === 1) out.push(this.users.nameOf(u));
    }
    return out;
  }

  private setFollowsOf(u: number, follows: readonly string[]): string[] {
    const next = new Int32Array(follows.length);
    for (let k = 0; k < follows.length; k++) next[k] = this.ids.author(follows[k]!);
    const n = this.arena.replace(u, next);
    this.untrackUnfollowed();
    const toLoad: string[] = [];
    for (let k = 0; k < n; k++) {
      if (this.windows.tracked[next[k]!] !== 1) toLoad.push(this.authors.nameOf(next[k]!));
    }
    return toLoad;
  }

  private setTopicsOf(u: number, topics: readonly string[]): string[] {
    if (!this.topicFollows.userTopics[u] && topics.length === 0) return [];
    const ids: number[] = [];
    for (const name of topics) ids.push(this.ids.topic(name));
    // New follows first (replace): a dropped topic may free the last record naming a new one,
    // which must not release it from the intern table meanwhile.
    const next = this.topicFollows.replace(u, ids);
    this.untrackUnfollowed();
    const toLoad: string[] = [];
    for (const t of next) {
      if (this.records.topicTracked[t] !== 1) toLoad.push(this.topics.nameOf(t));
    }
    return toLoad;
  }

  private dropId(u: number): void {
    this.setTopicsOf(u, []);
    this.arena.drop(u);
    this.untrackUnfollowed();
    this.counts.clear(u);
    this.users.release(u);
  }

  /** Authors and topics nobody held follows any more: their windows go, their ids may too. */
  private untrackUnfollowed(): void {
    const authors = this.arena.unfollowed;
    for (const a of authors) {
      this.windows.forget(a);
      if (this.records.authorRecRefs[a] === 0) this.authors.release(a);
    }
    authors.length = 0;
    const topics = this.topicFollows.unfollowed;
    for (const t of topics) {
      this.records.forgetTopic(t);
      if (this.records.unnamed(t)) this.topics.release(t);
    }
    topics.length = 0;
  }
}

/** Follows of released users reclaim() takes out of the follower lists per sweep, at least. */
const RECLAIM_PER_SWEEP = 100_000;
