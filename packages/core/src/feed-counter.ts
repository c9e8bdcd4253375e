import { feedWindowStart } from '@bubble/protocol';
import { Arrivals } from './feed/arrivals.js';
import { AuthorWindows, type WindowPost } from './feed/author-windows.js';
import { ChangeListing, type ChangedCounts } from './feed/change-listing.js';
import { FollowArena } from './feed/follow-arena.js';
import { TopicFollows } from './feed/topic-follows.js';
import { TopicRecords, recordKey } from './feed/topic-records.js';
import { UserCounts } from './feed/user-counts.js';
import { InternTable, idHash } from './intern-table.js';

export type { WindowPost };

/** A post of a topic's window: its author and every topic it carries. */
export interface TopicWindowPost {
  author: string;
  id: string;
  ts: number;
  topics: readonly string[];
}

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
 * The parts (feed/): who follows whom (FollowArena, TopicFollows), the posts (AuthorWindows,
 * TopicRecords), the moments waited for (Arrivals) and the counts handed out (ChangeListing).
 * This class holds the counts and walks the parts' followers, by integer ids.
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
  private readonly counts = new UserCounts(
    this.arena,
    this.topicFollows,
    this.windows,
    this.records,
  );
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

  hasUser(user: string): boolean {
    return this.users.idOf(user) !== undefined;
  }

  countOf(user: string): number | undefined {
    const u = this.users.idOf(user);
    return u === undefined ? undefined : this.counts.count[u];
  }

  readAtOf(user: string): number | null {
    const u = this.users.idOf(user);
    if (u === undefined) return null;
    const at = this.counts.readAt[u]!;
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
    const due = this.arrivals;
    while (due.nextPostExpiry(horizon)) this.trimAuthor(due.id, horizon, previous);
    while (due.nextPostArrival(time)) {
      const { id: a, ts, hash } = due;
      if (ts > horizon && this.windows.find(a, ts, hash) >= 0)
        this.counts.walkAuthorPost(a, ts, hash, 1);
    }
    while (due.nextRecordExpiry(horizon)) {
      const { id: r, ts, hash } = due;
      if (!this.records.isRecord(r, ts, hash)) continue;
      if (ts <= previous) this.counts.walkRecord(r, -1);
      this.records.drop(r);
    }
    while (due.nextRecordArrival(time)) {
      const { id: r, ts, hash } = due;
      if (ts > horizon && this.records.isRecord(r, ts, hash)) this.counts.walkRecord(r, 1);
    }
  }

  /**
   * Adds or replaces a user. Returns the authors whose posts must be loaded (loadAuthor) before
   * the user's count is right; recompute() the user afterwards.
   */
  setUser(user: string, follows: readonly string[], readAt: number | null): string[] {
    const fresh = this.users.idOf(user) === undefined;
    const u = this.users.intern(user);
    this.ensureUserCapacity(u + 1);
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
    this.recomputeId(u);
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
    const records = this.records;
    if (t === undefined || this.topicFollows.followers.count[t] === 0) return;
    if (records.topicTracked[t] === 1) return;
    records.topicTracked[t] = 1;
    const horizon = this.now - this.lookbackMs;
    for (const post of posts) {
      if (post.ts <= horizon) continue;
      const hash = idHash(post.id);
      const key = recordKey(post.author, post.ts, hash);
      const r =
        records.recordOfKey(key) ?? this.newRecord(key, post.author, post.ts, hash, post.topics);
      records.addToWindow(t, r);
    }
  }

  /**
   * Makes a loaded topic's window equal to the stored posts, repairing a missed post or delete
   * (call after reloading the authors' windows): what the store lacks is walked out and dropped,
   * what the window lacks is added, and the topic's followers are recomputed. Returns how many
   * posts it had to add or remove.
   */
  reloadTopic(topic: string, posts: readonly TopicWindowPost[]): number {
    const t = this.topics.idOf(topic);
    const records = this.records;
    if (t === undefined || records.topicTracked[t] !== 1) return 0;
    const horizon = this.now - this.lookbackMs;
    const stored = new Set<string>();
    for (const post of posts) {
      if (post.ts > horizon) stored.add(recordKey(post.author, post.ts, idHash(post.id)));
    }
    let repaired = 0;
    const recs = records.winRec[t];
    if (recs) {
      const present: number[] = [];
      for (let i = records.winStart[t]!; i < records.winEnd[t]!; i++) present.push(recs[i]!);
      for (const r of present) {
        if (stored.delete(records.keyOf(r))) continue;
        if (records.recTs[r]! <= this.now) this.counts.walkRecord(r, -1);
        records.drop(r);
        repaired++;
      }
    }
    for (const post of posts) {
      const hash = idHash(post.id);
      const key = recordKey(post.author, post.ts, hash);
      if (!stored.has(key)) continue;
      records.addToWindow(
        t,
        records.recordOfKey(key) ?? this.newRecord(key, post.author, post.ts, hash, post.topics),
      );
      repaired++;
    }
    if (repaired > 0) {
      const { users, count } = this.topicFollows.followers;
      const followers = users[t]!;
      for (let i = 0; i < count[t]!; i++) this.recomputeId(followers[i]!);
    }
    return repaired;
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

  /** Follows (and topic follows) of released users still in follower lists. */
  get unreclaimedFollows(): number {
    return this.releasingFollows;
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
   * Makes an author's window equal to the stored posts, repairing a missed post or delete: what
   * the store lacks is deleted, what the window lacks is added, each through the usual walks.
   * Returns how many posts it had to add or remove.
   */
  reloadAuthor(author: string, posts: readonly WindowPost[]): number {
    const a = this.authors.idOf(author);
    const windows = this.windows;
    if (a === undefined || windows.tracked[a] !== 1) return 0;
    const horizon = this.now - this.lookbackMs;
    const stored = new Map<number, Set<number>>();
    for (const post of posts) {
      if (post.ts <= horizon) continue;
      let hashes = stored.get(post.ts);
      if (!hashes) stored.set(post.ts, (hashes = new Set()));
      hashes.add(idHash(post.id));
    }
    let repaired = 0;
    const tsArr = windows.postTs[a];
    const hashArr = windows.postHash[a];
    if (tsArr && hashArr) {
      for (let i = windows.postEnd[a]! - 1; i >= windows.postStart[a]!; i--) {
        const ts = tsArr[i]!;
        const hash = hashArr[i]!;
        if (stored.get(ts)?.delete(hash)) continue;
        windows.removeAt(a, i);
        if (ts <= this.now) this.counts.walkAuthorPost(a, ts, hash, -1);
        this.dropRecordOf(author, ts, hash);
        repaired++;
      }
    }
    for (const post of posts) {
      if (stored.get(post.ts)?.has(idHash(post.id))) {
        this.insertPost(a, post.ts, idHash(post.id));
        repaired++;
      }
    }
    return repaired;
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
    if (u !== undefined) this.recomputeId(u);
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
      const key = recordKey(author, ts, hash);
      const records = this.records;
      if (records.recordOfKey(key) === undefined) {
        for (const name of topics) {
          const t = this.topics.idOf(name);
          if (t === undefined || records.topicTracked[t] !== 1) continue;
          if (created < 0) created = this.newRecord(key, author, ts, hash, topics);
          records.addToWindow(t, created);
        }
      }
    }
    const a = this.authors.idOf(author);
    if (a !== undefined && this.windows.tracked[a] === 1) this.insertPost(a, ts, hash);
    if (created >= 0 && ts <= this.now) this.counts.walkRecord(created, 1);
  }

  deletePost(author: string, id: string, ts: number): void {
    const hash = idHash(id);
    const a = this.authors.idOf(author);
    if (a !== undefined && this.windows.tracked[a] === 1) {
      const at = this.windows.find(a, ts, hash);
      if (at >= 0) {
        this.windows.removeAt(a, at);
        if (ts <= this.now) this.counts.walkAuthorPost(a, ts, hash, -1);
      }
    }
    this.dropRecordOf(author, ts, hash);
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
    for (let k = 0; k < follows.length; k++) next[k] = this.internAuthor(follows[k]!);
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
    for (const name of topics) ids.push(this.internTopic(name));
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

  private recomputeId(u: number): void {
    const counts = this.counts;
    counts.recompute(u, feedWindowStart(counts.readAt[u]!, this.now, this.lookbackMs), this.now);
  }

  private ensureUserCapacity(n: number): void {
    if (this.counts.hasRoomFor(n)) return;
    this.counts.ensureUserCapacity(n);
    this.arena.ensureUserCapacity(n);
    this.changes.ensureUserCapacity(n);
  }

  private insertPost(a: number, ts: number, hash: number): void {
    if (this.windows.insert(a, ts, hash, this.now) && ts <= this.now) {
      this.counts.walkAuthorPost(a, ts, hash, 1);
    }
  }

  /** Drops the author's posts with ts ≤ horizon; the counted ones (ts ≤ previous T) stop counting. */
  private trimAuthor(a: number, horizon: number, previous: number): void {
    const windows = this.windows;
    const tsArr = windows.postTs[a];
    if (!tsArr) return;
    const hashArr = windows.postHash[a]!;
    const from = windows.postStart[a]!;
    const to = windows.trim(a, horizon);
    for (let i = from; i < to; i++) {
      const ts = tsArr[i]!;
      if (ts <= previous) this.counts.walkAuthorPost(a, ts, hashArr[i]!, -1);
    }
  }

  /** A topic record of the post, its author and topics interned. */
  private newRecord(
    key: string,
    author: string,
    ts: number,
    hash: number,
    topics: readonly string[],
  ): number {
    const a = this.internAuthor(author);
    const topicIds = new Int32Array(topics.length);
    for (let k = 0; k < topics.length; k++) topicIds[k] = this.internTopic(topics[k]!);
    return this.records.create(key, a, topicIds, ts, hash, this.now);
  }

  /** Walks out and drops the record of a post gone, if it has one. */
  private dropRecordOf(author: string, ts: number, hash: number): void {
    const r = this.records.recordOfKey(recordKey(author, ts, hash));
    if (r === undefined) return;
    if (ts <= this.now) this.counts.walkRecord(r, -1);
    this.records.drop(r);
  }

  private internAuthor(name: string): number {
    const a = this.authors.intern(name);
    if (this.arena.followers.count.length <= a) {
      this.arena.ensureAuthorCapacity(a + 1);
      this.windows.ensureAuthorCapacity(a + 1);
      this.records.ensureAuthorCapacity(a + 1);
    }
    return a;
  }

  private internTopic(name: string): number {
    const t = this.topics.intern(name);
    if (this.topicFollows.followers.count.length <= t) {
      const size = Math.max(16, (t + 1) * 2);
      this.topicFollows.ensureTopicCapacity(size);
      this.records.ensureTopicCapacity(size);
    }
    return t;
  }
}

/** Follows of released users reclaim() takes out of the follower lists per sweep, at least. */
const RECLAIM_PER_SWEEP = 100_000;
