import { InternTable, growFloat64, growInt32, idHash } from './intern-table.js';
import { TimeHeap } from './time-heap.js';

export interface ChangedCounts {
  /** User ids (see nameAt) whose count changed; valid until the next takeChanged(). */
  ids: Int32Array;
  counts: Int32Array;
}

/** A post as the counter keeps it: no id string, just its hash. */
export interface WindowPost {
  id: string;
  ts: number;
}

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
 * Topics: a post carrying a topic some held user follows gets a record (its author's name, its
 * topics' names, ts, id hash), kept in the window of each such topic (record ids by ts). While a
 * post has a record, the record walks it, not its author's window: one walk over the followers of
 * its author and of each of its topics, a user counted once through a per-walk stamp. A user u
 * counts a record in topic t's window only when u does not follow its author and t is the first
 * of its topics u follows, so recompute() counts each post once too. Users without topics cost
 * one size check per author walk, nothing more.
 */
export class FeedCounter {
  readonly users = new InternTable();
  readonly authors = new InternTable();
  readonly topics = new InternTable();
  private readonly lookbackMs: number;
  private now = -Infinity;

  /**
   * Every user's follow list lives in one arena (two typed arrays, not two per user: 200k small
   * typed arrays are 400k heap objects that every major GC marks). User u's follows are
   * followAuthor[followStart[u] … + followLen[u]), followLen -1 when u has no follow set;
   * followPos holds, at the same index, where u stands in that author's follower list.
   */
  private followStart = new Int32Array(0);
  private followLen = new Int32Array(0);
  private followAuthor = new Int32Array(0);
  private followPos = new Int32Array(0);
  /** End of the used part of the arena; ranges left by replaced follow sets are garbage. */
  private arenaUsed = 0;
  private arenaLive = 0;
  private readAt = new Float64Array(0);
  private count = new Int32Array(0);
  /** The count last handed out by takeChanged(); -1 before the first time. */
  private reported = new Int32Array(0);
  /** 1 for ids of users held now. */
  private held = new Uint8Array(0);
  private changedIds = new Int32Array(0);
  private changedCounts = new Int32Array(0);

  private followers: (Int32Array<ArrayBuffer> | undefined)[] = [];
  /**
   * Beside each follower of an author, where that author stands in the follower's follow list
   * (an offset from followStart, which compaction of the arena leaves alone): removing a
   * follower moves the last one into its place and fixes that one's followPos in O(1).
   */
  private followerOffset: (Int32Array<ArrayBuffer> | undefined)[] = [];
  private followerCount = new Int32Array(0);
  /** 1 once an author's stored posts have been loaded into its window. */
  private tracked = new Uint8Array(0);
  private postTs: (Float64Array<ArrayBuffer> | undefined)[] = [];
  private postHash: (Int32Array<ArrayBuffer> | undefined)[] = [];
  private postStart = new Int32Array(0);
  private postEnd = new Int32Array(0);

  private scratch = new Int32Array(0);
  /** Per author, scratch positions for setFollowsOf. */
  private scratchPos = new Int32Array(0);
  private scratchStamp = 0;

  /** Users released (releaseUser) but still in follower lists, and their follows. */
  private readonly releasing: number[] = [];
  private releasingFollows = 0;

  private readonly expiries = new TimeHeap();
  private readonly arrivals = new TimeHeap();

  /** Per user, the topic ids followed (undefined for none). */
  private userTopics: (Int32Array | undefined)[] = [];
  /** Beside each of a user's topics, where the user stands in that topic's follower list. */
  private userTopicPos: (Int32Array | undefined)[] = [];
  /** Per user, the stamp of the last record walk that counted them (counted once per walk). */
  private walkMark = new Int32Array(0);
  private walkStamp = 0;
  private topicFollowers: (Int32Array<ArrayBuffer> | undefined)[] = [];
  private topicFollowerCount = new Int32Array(0);
  /** Beside each follower of a topic, where the topic stands in the follower's userTopics. */
  private topicFollowerOffset: (Int32Array<ArrayBuffer> | undefined)[] = [];
  /** Per topic, scratch: where the user being set stood in its list (setTopics). */
  private topicScratchPos = new Int32Array(0);
  /** 1 once a topic's stored posts have been loaded into its window. */
  private topicTracked = new Uint8Array(0);
  /** Per topic: record ids ordered by ts in [winStart, winEnd), their ts beside them. */
  private winTs: (Float64Array<ArrayBuffer> | undefined)[] = [];
  private winRec: (Int32Array<ArrayBuffer> | undefined)[] = [];
  private winStart = new Int32Array(0);
  private winEnd = new Int32Array(0);
  /** Per-author and per-topic marks of recompute (a user's follows and topics). */
  private authorMark = new Int32Array(0);
  private topicMark = new Int32Array(0);
  private markStamp = 0;

  /** "<author>\n<ts>\n<hash>" → record id, for the posts that have a record. */
  private readonly recordOf = new Map<string, number>();
  private recKey: string[] = [];
  /**
   * The record's author and topics as interned ids: an author or topic a record names stays
   * interned (authorRecRefs, topicRecRefs) until its last record goes, whether followed or not.
   */
  private recAuthor = new Int32Array(0);
  private recTopics: Int32Array[] = [];
  private authorRecRefs = new Int32Array(0);
  private topicRecRefs = new Int32Array(0);
  private recTs = new Float64Array(0);
  private recHash = new Int32Array(0);
  /** Topic windows holding the record; 0 for a free record id. */
  private recLive = new Int32Array(0);
  private readonly freeRecords: number[] = [];
  private recordCount = 0;
  private readonly recordExpiries = new TimeHeap();
  private readonly recordArrivals = new TimeHeap();
  /** advanceTo's scratch: the arrivals of one ts already walked. */
  private readonly arrivalRun = new Set<string>();
  private arrivalRunTs = NaN;

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

  hasUser(user: string): boolean {
    return this.users.idOf(user) !== undefined;
  }

  countOf(user: string): number | undefined {
    const u = this.users.idOf(user);
    return u === undefined ? undefined : this.count[u];
  }

  readAtOf(user: string): number | null {
    const u = this.users.idOf(user);
    if (u === undefined) return null;
    const at = this.readAt[u]!;
    return at === -Infinity ? null : at;
  }

  followsOf(user: string): string[] {
    const u = this.users.idOf(user);
    if (u === undefined) return [];
    const start = this.followStart[u]!;
    const names: string[] = [];
    for (let k = 0; k < this.followLen[u]!; k++) {
      names.push(this.authors.nameOf(this.followAuthor[start + k]!));
    }
    return names;
  }

  topicsOf(user: string): string[] {
    const u = this.users.idOf(user);
    const topics = u === undefined ? undefined : this.userTopics[u];
    return topics ? Array.from(topics, (t) => this.topics.nameOf(t)) : [];
  }

  /** Topics some held user follows. */
  get trackedTopicCount(): number {
    return this.topics.size;
  }

  /** Posts that reach users through a topic (records), for metrics and tests. */
  get topicPostCount(): number {
    return this.recordOf.size;
  }

  /**
   * Users whose count differs from the one last handed out, with their counts. A scan of one
   * typed array: cheaper than marking users inside the follower walks.
   */
  takeChanged(): ChangedCounts {
    const capacity = this.users.capacity;
    const count = this.count;
    const reported = this.reported;
    const held = this.held;
    if (this.changedIds.length < capacity) {
      this.changedIds = new Int32Array(capacity);
      this.changedCounts = new Int32Array(capacity);
    }
    const ids = this.changedIds;
    const counts = this.changedCounts;
    let n = 0;
    for (let u = 0; u < capacity; u++) {
      const c = count[u]!;
      if (c !== reported[u] && held[u] === 1) {
        reported[u] = c;
        ids[n] = u;
        counts[n++] = c;
      }
    }
    return { ids: ids.subarray(0, n), counts: counts.subarray(0, n) };
  }

  /** Records that `count` is what the user's stored badge already shows. */
  markReported(user: string, count: number): void {
    const u = this.users.idOf(user);
    if (u !== undefined) this.reported[u] = count;
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
    while (this.expiries.peekTs() <= horizon) {
      this.expiries.pop((_ts, author) => this.trimAuthor(author, horizon, previous));
    }
    // A post can be scheduled twice: its author unfollowed and followed again before it is due
    // (the window reloaded), or deleted and posted again. Its entries share a ts, so they come
    // out of the heap in one run; walking it once per run is walking it once.
    this.arrivalRunTs = NaN;
    while (this.arrivals.peekTs() <= time) {
      this.arrivals.pop((ts, author, hash) => {
        if (!this.firstOfRun(ts, `${author}:${hash}`)) return;
        if (ts > horizon && this.findPost(author, ts, hash) >= 0) {
          this.walkAuthorPost(author, ts, hash, 1);
        }
      });
    }
    while (this.recordExpiries.peekTs() <= horizon) {
      this.recordExpiries.pop((ts, r, hash) => {
        if (!this.isRecord(r, ts, hash)) return;
        if (ts <= previous) this.walkRecord(r, -1);
        this.dropRecord(r);
      });
    }
    this.arrivalRunTs = NaN;
    while (this.recordArrivals.peekTs() <= time) {
      this.recordArrivals.pop((ts, r, hash) => {
        if (!this.firstOfRun(ts, `${r}:${hash}`)) return;
        if (ts > horizon && this.isRecord(r, ts, hash)) this.walkRecord(r, 1);
      });
    }
    this.arrivalRun.clear();
  }

  /** Whether an arrival is the first of its key in the run of its ts coming out of a heap. */
  private firstOfRun(ts: number, key: string): boolean {
    if (ts !== this.arrivalRunTs) {
      this.arrivalRunTs = ts;
      this.arrivalRun.clear();
    }
    if (this.arrivalRun.has(key)) return false;
    this.arrivalRun.add(key);
    return true;
  }

  /**
   * Adds or replaces a user. Returns the authors whose posts must be loaded (loadAuthor) before
   * the user's count is right; recompute() the user afterwards.
   */
  setUser(user: string, follows: readonly string[], readAt: number | null): string[] {
    const fresh = this.users.idOf(user) === undefined;
    const u = this.users.intern(user);
    this.ensureUserCapacity(u + 1);
    this.readAt[u] = readAt ?? -Infinity;
    if (fresh) this.reported[u] = -1;
    this.held[u] = 1;
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
    if (u === undefined || at <= this.readAt[u]!) return;
    this.readAt[u] = at;
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

  private setTopicsOf(u: number, topics: readonly string[]): string[] {
    const old = this.userTopics[u];
    if (!old && topics.length === 0) return [];
    const mark = this.nextMark();
    const next: number[] = [];
    for (const name of topics) {
      const t = this.topics.intern(name);
      this.ensureTopicCapacity(t + 1);
      if (this.topicMark[t] === mark) continue;
      this.topicMark[t] = mark;
      next.push(t);
    }
    const oldMark = this.nextMark();
    const oldPos = this.userTopicPos[u];
    for (let j = 0; old && j < old.length; j++) {
      const t = old[j]!;
      if (this.topicMark[t] !== mark) continue;
      this.topicMark[t] = oldMark;
      this.topicScratchPos[t] = oldPos![j]!;
    }
    // New follows first: a dropped topic may free the last record naming a new one, which
    // must not release it from the intern table meanwhile.
    const nextPos = new Int32Array(next.length);
    next.forEach((t, k) => {
      if (this.topicMark[t] !== oldMark) nextPos[k] = this.addTopicFollower(t, u, k);
      else {
        nextPos[k] = this.topicScratchPos[t]!;
        this.topicFollowerOffset[t]![nextPos[k]] = k;
      }
    });
    for (let j = 0; old && j < old.length; j++) {
      if (this.topicMark[old[j]!] !== oldMark) this.removeTopicFollower(old[j]!, oldPos![j]!);
    }
    const toLoad: string[] = [];
    for (const t of next) if (this.topicTracked[t] !== 1) toLoad.push(this.topics.nameOf(t));
    this.userTopics[u] = next.length > 0 ? Int32Array.from(next) : undefined;
    this.userTopicPos[u] = next.length > 0 ? nextPos : undefined;
    return toLoad;
  }

  /**
   * Fills a topic's window from the stored posts. Posts already known (a record from the change
   * log or another topic) are recognised by (author, ts, id) and not counted twice. The topic's
   * followers must be recomputed afterwards.
   */
  loadTopic(topic: string, posts: readonly TopicWindowPost[]): void {
    const t = this.topics.idOf(topic);
    if (t === undefined || this.topicFollowerCount[t] === 0 || this.topicTracked[t] === 1) return;
    this.topicTracked[t] = 1;
    const horizon = this.now - this.lookbackMs;
    for (const post of posts) {
      if (post.ts <= horizon) continue;
      const hash = idHash(post.id);
      const key = recordKey(post.author, post.ts, hash);
      let r = this.recordOf.get(key);
      if (r === undefined) r = this.newRecord(key, post.author, post.ts, hash, post.topics);
      this.addToWindow(t, r);
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
    if (t === undefined || this.topicTracked[t] !== 1) return 0;
    const horizon = this.now - this.lookbackMs;
    const stored = new Set<string>();
    for (const post of posts) {
      if (post.ts > horizon) stored.add(recordKey(post.author, post.ts, idHash(post.id)));
    }
    let repaired = 0;
    const recs = this.winRec[t];
    if (recs) {
      const present: number[] = [];
      for (let i = this.winStart[t]!; i < this.winEnd[t]!; i++) present.push(recs[i]!);
      for (const r of present) {
        if (stored.delete(this.recKey[r]!)) continue;
        if (this.recTs[r]! <= this.now) this.walkRecord(r, -1);
        this.dropRecord(r);
        repaired++;
      }
    }
    for (const post of posts) {
      const hash = idHash(post.id);
      const key = recordKey(post.author, post.ts, hash);
      if (!stored.has(key)) continue;
      const r =
        this.recordOf.get(key) ?? this.newRecord(key, post.author, post.ts, hash, post.topics);
      this.addToWindow(t, r);
      repaired++;
    }
    if (repaired > 0) {
      const followers = this.topicFollowers[t]!;
      for (let i = 0; i < this.topicFollowerCount[t]!; i++) this.recomputeId(followers[i]!);
    }
    return repaired;
  }

  /** Whether the topic's stored posts are in its window. */
  isTopicLoaded(topic: string): boolean {
    const t = this.topics.idOf(topic);
    return t !== undefined && this.topicTracked[t] === 1;
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
    this.held[u] = 0;
    this.users.detach(u);
    this.releasing.push(u);
    this.releasingFollows += Math.max(0, this.followLen[u]!) + (this.userTopics[u]?.length ?? 0);
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
      const follows = Math.max(0, this.followLen[u]!) + (this.userTopics[u]?.length ?? 0);
      this.dropId(u);
      removed += follows;
      this.releasingFollows -= follows;
    }
    return this.releasingFollows;
  }

  private dropId(u: number): void {
    this.setTopicsOf(u, []);
    const start = this.followStart[u]!;
    const length = this.followLen[u]!;
    for (let k = start; k < start + length; k++) {
      this.removeFollower(this.followAuthor[k]!, this.followPos[k]!);
    }
    if (length > 0) this.arenaLive -= length;
    this.followLen[u] = -1;
    this.held[u] = 0;
    this.count[u] = 0;
    this.readAt[u] = -Infinity;
    this.users.release(u);
  }

  /** Authors that are followed but whose posts are not loaded yet. */
  isAuthorLoaded(author: string): boolean {
    const a = this.authors.idOf(author);
    return a !== undefined && this.tracked[a] === 1;
  }

  /**
   * Fills an author's window from the stored posts. Posts already present (from the change log)
   * are recognised by (ts, id) and not counted twice. Followers must be recomputed afterwards.
   */
  loadAuthor(author: string, posts: readonly WindowPost[]): void {
    const a = this.authors.idOf(author);
    if (a === undefined || this.followerCount[a] === 0) return;
    this.tracked[a] = 1;
    const horizon = this.now - this.lookbackMs;
    const incoming = posts.filter((post) => post.ts > horizon);
    if (incoming.length === 0) return;
    incoming.sort((x, y) => x.ts - y.ts);
    const tsArr = this.postTs[a];
    const start = this.postStart[a]!;
    const end = this.postEnd[a]!;
    const size = end - start + incoming.length;
    const nextTs = new Float64Array(Math.max(8, size * 1.25) | 0);
    const nextHash = new Int32Array(nextTs.length);
    let n = 0;
    let i = start;
    let j = 0;
    // Merge the sorted window with the sorted load, skipping posts the window already holds.
    while (i < end || j < incoming.length) {
      const takeOld = j >= incoming.length || (i < end && tsArr![i]! <= incoming[j]!.ts);
      if (takeOld) {
        nextTs[n] = tsArr![i]!;
        nextHash[n++] = this.postHash[a]![i++]!;
        continue;
      }
      const post = incoming[j++]!;
      const hash = idHash(post.id);
      let present = false;
      for (let k = n - 1; k >= 0 && nextTs[k] === post.ts; k--)
        if (nextHash[k] === hash) present = true;
      for (let k = i; !present && k < end && tsArr![k] === post.ts; k++)
        if (this.postHash[a]![k] === hash) present = true;
      if (present) continue;
      nextTs[n] = post.ts;
      nextHash[n++] = hash;
      this.expiries.push(post.ts, a, hash);
      if (post.ts > this.now) this.arrivals.push(post.ts, a, hash);
    }
    this.postTs[a] = nextTs;
    this.postHash[a] = nextHash;
    this.postStart[a] = 0;
    this.postEnd[a] = n;
  }

  /** Number of posts in the author's window (ts > T − L), or null when not tracked. */
  windowSize(author: string): number | null {
    const a = this.authors.idOf(author);
    if (a === undefined || this.tracked[a] !== 1) return null;
    return this.postEnd[a]! - this.postStart[a]!;
  }

  /**
   * Makes an author's window equal to the stored posts, repairing a missed post or delete: what
   * the store lacks is deleted, what the window lacks is added, each through the usual walks.
   * Returns how many posts it had to add or remove.
   */
  reloadAuthor(author: string, posts: readonly WindowPost[]): number {
    const a = this.authors.idOf(author);
    if (a === undefined || this.tracked[a] !== 1) return 0;
    const horizon = this.now - this.lookbackMs;
    const stored = new Map<number, Set<number>>();
    for (const post of posts) {
      if (post.ts <= horizon) continue;
      let hashes = stored.get(post.ts);
      if (!hashes) stored.set(post.ts, (hashes = new Set()));
      hashes.add(idHash(post.id));
    }
    let repaired = 0;
    const tsArr = this.postTs[a];
    const hashArr = this.postHash[a];
    if (tsArr && hashArr) {
      for (let i = this.postEnd[a]! - 1; i >= this.postStart[a]!; i--) {
        const ts = tsArr[i]!;
        const hashes = stored.get(ts);
        const hash = hashArr[i]!;
        if (hashes?.delete(hash)) continue;
        this.removeAt(a, i);
        if (ts <= this.now) this.walkAuthorPost(a, ts, hash, -1);
        const r =
          this.recordOf.size > 0 ? this.recordOf.get(recordKey(author, ts, hash)) : undefined;
        if (r !== undefined) {
          if (ts <= this.now) this.walkRecord(r, -1);
          this.dropRecord(r);
        }
        repaired++;
      }
    }
    for (const post of posts) {
      if (stored.get(post.ts)?.has(idHash(post.id))) {
        this.insertPost(a, post.ts, idHash(post.id), true);
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
    if (u === undefined) return undefined;
    let total = 0;
    const start = this.followStart[u]!;
    for (let k = start; k < start + this.followLen[u]!; k++) {
      total += this.countBetween(this.followAuthor[k]!, afterTs, untilTs);
    }
    return total + this.topicOnlyCount(u, afterTs, untilTs);
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
      if (!this.recordOf.has(key)) {
        for (const name of topics) {
          const t = this.topics.idOf(name);
          if (t === undefined || this.topicTracked[t] !== 1) continue;
          if (created < 0) created = this.newRecord(key, author, ts, hash, topics);
          this.addToWindow(t, created);
        }
      }
    }
    const a = this.authors.idOf(author);
    if (a !== undefined && this.tracked[a] === 1) this.insertPost(a, ts, hash, true);
    if (created >= 0 && ts <= this.now) this.walkRecord(created, 1);
  }

  deletePost(author: string, id: string, ts: number): void {
    const hash = idHash(id);
    const a = this.authors.idOf(author);
    if (a !== undefined && this.tracked[a] === 1) {
      const at = this.findPost(a, ts, hash);
      if (at >= 0) {
        this.removeAt(a, at);
        if (ts <= this.now) this.walkAuthorPost(a, ts, hash, -1);
      }
    }
    if (this.recordOf.size === 0) return;
    const r = this.recordOf.get(recordKey(author, ts, hash));
    if (r === undefined) return;
    if (ts <= this.now) this.walkRecord(r, -1);
    this.dropRecord(r);
  }

  /** Every held user, for reconciliation and pool hand-over. */
  heldUsers(): string[] {
    const out: string[] = [];
    for (let u = 0; u < this.users.capacity; u++) {
      if (this.held[u] === 1) out.push(this.users.nameOf(u));
    }
    return out;
  }

  private setFollowsOf(u: number, follows: readonly string[]): string[] {
    const seen = this.scratchMark();
    const next = new Int32Array(follows.length);
    const toLoad: string[] = [];
    let n = 0;
    for (const name of follows) {
      const a = this.authors.intern(name);
      this.ensureAuthorCapacity(a + 1);
      this.scratch = growInt32(this.scratch, a + 1);
      if (this.scratch[a] === seen) continue;
      this.scratch[a] = seen;
      next[n++] = a;
    }
    // Allocated first: making room may move the old range (read below) within the arena.
    const at = this.allocateFollows(n);
    const oldStart = this.followStart[u]!;
    const oldLength = this.followLen[u]!;
    const authors = this.followAuthor;
    const positions = this.followPos;
    if (oldLength > 0) {
      // Where u stands in each old author's list, by author (scratchPos), for those kept.
      const stillFollowed = this.scratchMark();
      for (let k = 0; k < n; k++) this.scratch[next[k]!] = stillFollowed;
      this.scratchPos = growInt32(this.scratchPos, this.scratch.length);
      for (let k = oldStart; k < oldStart + oldLength; k++) {
        const a = authors[k]!;
        if (this.scratch[a] === stillFollowed) this.scratchPos[a] = positions[k]!;
        else this.removeFollower(a, positions[k]!);
      }
      const wasFollowed = this.scratchMark();
      for (let k = oldStart; k < oldStart + oldLength; k++) this.scratch[authors[k]!] = wasFollowed;
      for (let k = 0; k < n; k++) {
        const a = next[k]!;
        authors[at + k] = a;
        if (this.scratch[a] === wasFollowed) {
          const position = this.scratchPos[a]!;
          positions[at + k] = position;
          this.followerOffset[a]![position] = k;
        } else {
          positions[at + k] = this.addFollower(a, u, k);
        }
      }
      this.arenaLive -= oldLength;
    } else {
      for (let k = 0; k < n; k++) {
        authors[at + k] = next[k]!;
        positions[at + k] = this.addFollower(next[k]!, u, k);
      }
    }
    this.followStart[u] = at;
    this.followLen[u] = n;
    for (let k = 0; k < n; k++) {
      if (this.tracked[next[k]!] !== 1) toLoad.push(this.authors.nameOf(next[k]!));
    }
    return toLoad;
  }

  /**
   * Room for `length` follows at the end of the arena. When it is full, the live ranges are
   * copied into a new arena twice their size, in user order: garbage goes, amortised O(1).
   */
  private allocateFollows(length: number): number {
    if (this.arenaUsed + length > this.followAuthor.length) {
      const size = Math.max(1024, 2 * (this.arenaLive + length));
      const authors = new Int32Array(size);
      const positions = new Int32Array(size);
      let used = 0;
      for (let u = 0; u < this.followLen.length; u++) {
        const l = this.followLen[u]!;
        if (l <= 0) continue;
        const start = this.followStart[u]!;
        authors.set(this.followAuthor.subarray(start, start + l), used);
        positions.set(this.followPos.subarray(start, start + l), used);
        this.followStart[u] = used;
        used += l;
      }
      this.followAuthor = authors;
      this.followPos = positions;
      this.arenaUsed = used;
    }
    const at = this.arenaUsed;
    this.arenaUsed += length;
    this.arenaLive += length;
    return at;
  }

  /** A fresh stamp for the per-author scratch marks: set membership without allocating a Set. */
  private scratchMark(): number {
    if (++this.scratchStamp === 0x7fffffff) {
      this.scratch.fill(0);
      this.scratchStamp = 1;
    }
    return this.scratchStamp;
  }

  private recomputeId(u: number): void {
    const start = this.followStart[u]!;
    const end = start + this.followLen[u]!;
    const after = Math.max(this.readAt[u]!, this.now - this.lookbackMs);
    let total = 0;
    for (let k = start; k < end; k++) {
      total += this.countBetween(this.followAuthor[k]!, after, this.now);
    }
    if (this.userTopics[u]) total += this.topicOnlyCount(u, after, this.now);
    this.count[u] = total;
  }

  /**
   * The user's posts with after < ts ≤ until that reach them through a topic only: in topic t's
   * window, those whose author u does not follow and whose first topic u follows is t.
   */
  private topicOnlyCount(u: number, after: number, until: number): number {
    const topics = this.userTopics[u];
    if (!topics || until <= after) return 0;
    const mark = this.nextMark();
    const start = this.followStart[u]!;
    for (let k = start; k < start + this.followLen[u]!; k++) {
      this.authorMark[this.followAuthor[k]!] = mark;
    }
    for (const t of topics) this.topicMark[t] = mark;
    let total = 0;
    for (const t of topics) {
      const tsArr = this.winTs[t];
      if (!tsArr) continue;
      const recs = this.winRec[t]!;
      const lo = this.winStart[t]!;
      const hi = this.winEnd[t]!;
      for (let i = upperBound(tsArr, lo, hi, after); i < hi && tsArr[i]! <= until; i++) {
        const r = recs[i]!;
        if (this.authorMark[this.recAuthor[r]!] === mark) continue;
        for (const other of this.recTopics[r]!) {
          if (this.topicMark[other] !== mark) continue;
          if (other === t) total++;
          break;
        }
      }
    }
    return total;
  }

  /** A fresh stamp for authorMark and topicMark. */
  private nextMark(): number {
    if (++this.markStamp === 0x7fffffff) {
      this.authorMark.fill(0);
      this.topicMark.fill(0);
      this.markStamp = 1;
    }
    return this.markStamp;
  }

  /** An author window's walk, unless the post has a record (which walks it instead). */
  private walkAuthorPost(a: number, ts: number, hash: number, delta: number): void {
    if (this.recordOf.size > 0 && this.recordOf.has(recordKey(this.authors.nameOf(a), ts, hash))) {
      return;
    }
    this.walk(a, ts, delta);
  }

  /**
   * Adds `delta` to every user the record's post reaches (followers of its author and of each
   * of its topics) for whom it counts (readAt < ts), each user once.
   */
  private walkRecord(r: number, delta: number): void {
    if (++this.walkStamp === 0x7fffffff) {
      this.walkMark.fill(0);
      this.walkStamp = 1;
    }
    const stamp = this.walkStamp;
    const ts = this.recTs[r]!;
    const readAt = this.readAt;
    const count = this.count;
    const marks = this.walkMark;
    const a = this.recAuthor[r]!;
    const authorFollowers = this.followers[a];
    const followerCount = authorFollowers ? this.followerCount[a]! : 0;
    for (let i = 0; i < followerCount; i++) {
      const u = authorFollowers![i]!;
      marks[u] = stamp;
      if (readAt[u]! < ts) count[u]! += delta;
    }
    for (const t of this.recTopics[r]!) {
      const list = this.topicFollowers[t];
      const n = list ? this.topicFollowerCount[t]! : 0;
      for (let i = 0; i < n; i++) {
        const u = list![i]!;
        if (marks[u] === stamp) continue;
        marks[u] = stamp;
        if (readAt[u]! < ts) count[u]! += delta;
      }
    }
  }

  private isRecord(r: number, ts: number, hash: number): boolean {
    return this.recLive[r]! > 0 && this.recTs[r] === ts && this.recHash[r] === hash;
  }

  /** A record in no window yet (addToWindow puts it in); its arrival and expiry scheduled. */
  private newRecord(
    key: string,
    author: string,
    ts: number,
    hash: number,
    topics: readonly string[],
  ): number {
    const r = this.freeRecords.pop() ?? this.recordCount++;
    if (r >= this.recTs.length) {
      const size = Math.max(64, r * 2);
      this.recTs = growFloat64(this.recTs, size);
      this.recHash = growInt32(this.recHash, size);
      this.recLive = growInt32(this.recLive, size);
      this.recAuthor = growInt32(this.recAuthor, size);
    }
    const a = this.authors.intern(author);
    this.ensureAuthorCapacity(a + 1);
    this.authorRecRefs[a]!++;
    const topicIds = new Int32Array(topics.length);
    topics.forEach((name, k) => {
      const t = this.topics.intern(name);
      this.ensureTopicCapacity(t + 1);
      this.topicRecRefs[t]!++;
      topicIds[k] = t;
    });
    this.recordOf.set(key, r);
    this.recKey[r] = key;
    this.recAuthor[r] = a;
    this.recTopics[r] = topicIds;
    this.recTs[r] = ts;
    this.recHash[r] = hash;
    this.recLive[r] = 0;
    this.recordExpiries.push(ts, r, hash);
    if (ts > this.now) this.recordArrivals.push(ts, r, hash);
    return r;
  }

  /** Takes the record out of every window and frees it, without walking. */
  private dropRecord(r: number): void {
    for (const t of this.recTopics[r]!) this.removeFromWindow(t, r);
    this.freeRecord(r);
  }

  /** Frees the record; an author or topic it was the last to name, and nobody follows, goes. */
  private freeRecord(r: number): void {
    this.recordOf.delete(this.recKey[r]!);
    const a = this.recAuthor[r]!;
    if (--this.authorRecRefs[a]! === 0 && this.followerCount[a] === 0) this.authors.release(a);
    for (const t of this.recTopics[r]!) {
      if (--this.topicRecRefs[t]! === 0 && this.topicFollowerCount[t] === 0) {
        this.topics.release(t);
      }
    }
    this.recKey[r] = '';
    this.recTopics[r] = NO_TOPICS;
    this.recLive[r] = 0;
    this.freeRecords.push(r);
  }

  /** Inserts record r into topic t's window, by ts, unless it is there. */
  private addToWindow(t: number, r: number): void {
    const ts = this.recTs[r]!;
    let tsArr = this.winTs[t];
    let recs = this.winRec[t];
    if (!tsArr || !recs) {
      tsArr = this.winTs[t] = new Float64Array(8);
      recs = this.winRec[t] = new Int32Array(8);
      this.winStart[t] = 0;
      this.winEnd[t] = 0;
    }
    const start = this.winStart[t]!;
    let end = this.winEnd[t]!;
    const at = upperBound(tsArr, start, end, ts);
    for (let i = at - 1; i >= start && tsArr[i] === ts; i--) if (recs[i] === r) return;
    if (end === tsArr.length) {
      const live = end - start;
      const size = live + 1 > tsArr.length / 2 ? tsArr.length * 2 : tsArr.length;
      const nextTs = new Float64Array(size);
      const nextRecs = new Int32Array(size);
      nextTs.set(tsArr.subarray(start, end));
      nextRecs.set(recs.subarray(start, end));
      this.winTs[t] = nextTs;
      this.winRec[t] = nextRecs;
      this.winStart[t] = 0;
      this.winEnd[t] = end = live;
      return this.addToWindow(t, r);
    }
    if (at < end) {
      tsArr.copyWithin(at + 1, at, end);
      recs.copyWithin(at + 1, at, end);
    }
    tsArr[at] = ts;
    recs[at] = r;
    this.winEnd[t] = end + 1;
    this.recLive[r]!++;
  }

  private removeFromWindow(t: number, r: number): void {
    const tsArr = this.winTs[t];
    const recs = this.winRec[t];
    if (!tsArr || !recs) return;
    const ts = this.recTs[r]!;
    const start = this.winStart[t]!;
    const end = this.winEnd[t]!;
    for (let i = upperBound(tsArr, start, end, ts) - 1; i >= start && tsArr[i] === ts; i--) {
      if (recs[i] !== r) continue;
      if (i === start) {
        this.winStart[t] = start + 1;
      } else {
        tsArr.copyWithin(i, i + 1, end);
        recs.copyWithin(i, i + 1, end);
        this.winEnd[t] = end - 1;
      }
      return;
    }
  }

  /** Appends u (t standing at `offset` in u's topics) to t's followers; returns where u stands. */
  private addTopicFollower(t: number, u: number, offset: number): number {
    const n = this.topicFollowerCount[t]!;
    let list = this.topicFollowers[t];
    let offsets = this.topicFollowerOffset[t];
    if (!list || !offsets || list.length === n) {
      list = this.topicFollowers[t] = growInt32(list ?? new Int32Array(0), n + 1);
      offsets = this.topicFollowerOffset[t] = resized(offsets, list.length);
    }
    list[n] = u;
    offsets[n] = offset;
    this.topicFollowerCount[t] = n + 1;
    return n;
  }

  /** As removeFollower: the last follower moves into `at`, its position fixed in O(1). */
  private removeTopicFollower(t: number, at: number): void {
    const list = this.topicFollowers[t];
    const offsets = this.topicFollowerOffset[t];
    if (!list || !offsets) return;
    const last = this.topicFollowerCount[t]! - 1;
    if (at !== last) {
      const moved = list[last]!;
      const offset = offsets[last]!;
      list[at] = moved;
      offsets[at] = offset;
      this.userTopicPos[moved]![offset] = at;
    }
    this.topicFollowerCount[t] = last;
    if (last === 0) this.untrackTopic(t);
  }

  /**
   * A topic nobody held follows: its window goes, and records left in no window are freed (their
   * author's window walks them again: nobody held follows any of their topics).
   */
  private untrackTopic(t: number): void {
    const recs = this.winRec[t];
    if (recs) {
      for (let i = this.winStart[t]!; i < this.winEnd[t]!; i++) {
        const r = recs[i]!;
        if (--this.recLive[r]! === 0) this.freeRecord(r);
      }
    }
    this.topicTracked[t] = 0;
    this.winTs[t] = undefined;
    this.winRec[t] = undefined;
    this.winStart[t] = 0;
    this.winEnd[t] = 0;
    this.topicFollowers[t] = undefined;
    this.topicFollowerOffset[t] = undefined;
    if (this.topicRecRefs[t] === 0) this.topics.release(t);
  }

  private ensureTopicCapacity(n: number): void {
    if (this.topicFollowerCount.length >= n) return;
    const size = Math.max(16, n * 2);
    this.topicFollowerCount = growInt32(this.topicFollowerCount, size);
    this.winStart = growInt32(this.winStart, size);
    this.winEnd = growInt32(this.winEnd, size);
    this.topicMark = growInt32(this.topicMark, size);
    this.topicScratchPos = growInt32(this.topicScratchPos, size);
    this.topicRecRefs = growInt32(this.topicRecRefs, size);
    const tracked = new Uint8Array(size);
    tracked.set(this.topicTracked);
    this.topicTracked = tracked;
  }

  /** Adds `delta` to every follower for whom a post at `ts` counts (readAt < ts). */
  private walk(a: number, ts: number, delta: number): void {
    const list = this.followers[a];
    if (!list) return;
    const n = this.followerCount[a]!;
    const readAt = this.readAt;
    const count = this.count;
    for (let i = 0; i < n; i++) {
      const u = list[i]!;
      if (readAt[u]! < ts) count[u]! += delta;
    }
  }

  private insertPost(a: number, ts: number, hash: number, countIt: boolean): void {
    let tsArr = this.postTs[a];
    let hashArr = this.postHash[a];
    if (!tsArr || !hashArr) {
      tsArr = this.postTs[a] = new Float64Array(8);
      hashArr = this.postHash[a] = new Int32Array(8);
      this.postStart[a] = 0;
      this.postEnd[a] = 0;
    }
    const start = this.postStart[a]!;
    let end = this.postEnd[a]!;
    const at = upperBound(tsArr, start, end, ts);
    for (let i = at - 1; i >= start && tsArr[i] === ts; i--) if (hashArr[i] === hash) return;
    if (end === tsArr.length) {
      // Compact the trimmed head first; grow only when the live part is really full.
      const live = end - start;
      const size = live + 1 > tsArr.length / 2 ? tsArr.length * 2 : tsArr.length;
      const nextTs = new Float64Array(size);
      const nextHash = new Int32Array(size);
      nextTs.set(tsArr.subarray(start, end));
      nextHash.set(hashArr.subarray(start, end));
      this.postTs[a] = tsArr = nextTs;
      this.postHash[a] = hashArr = nextHash;
      this.postStart[a] = 0;
      this.postEnd[a] = end = live;
      return this.insertPost(a, ts, hash, countIt);
    }
    if (at < end) {
      tsArr.copyWithin(at + 1, at, end);
      hashArr.copyWithin(at + 1, at, end);
    }
    tsArr[at] = ts;
    hashArr[at] = hash;
    this.postEnd[a] = end + 1;
    this.expiries.push(ts, a, hash);
    if (ts > this.now) this.arrivals.push(ts, a, hash);
    else if (countIt) this.walkAuthorPost(a, ts, hash, 1);
  }

  private findPost(a: number, ts: number, hash: number): number {
    const tsArr = this.postTs[a];
    const hashArr = this.postHash[a];
    if (!tsArr || !hashArr) return -1;
    const start = this.postStart[a]!;
    for (
      let i = upperBound(tsArr, start, this.postEnd[a]!, ts) - 1;
      i >= start && tsArr[i] === ts;
      i--
    ) {
      if (hashArr[i] === hash) return i;
    }
    return -1;
  }

  private removeAt(a: number, at: number): void {
    const tsArr = this.postTs[a]!;
    const hashArr = this.postHash[a]!;
    const end = this.postEnd[a]!;
    tsArr.copyWithin(at, at + 1, end);
    hashArr.copyWithin(at, at + 1, end);
    this.postEnd[a] = end - 1;
  }

  /** Drops posts with ts ≤ horizon; those that were counted (ts ≤ previous T) stop counting. */
  private trimAuthor(a: number, horizon: number, previous: number): void {
    const tsArr = this.postTs[a];
    if (!tsArr) return;
    let start = this.postStart[a]!;
    const end = this.postEnd[a]!;
    const hashArr = this.postHash[a]!;
    while (start < end && tsArr[start]! <= horizon) {
      const hash = hashArr[start]!;
      const ts = tsArr[start++]!;
      if (ts <= previous) this.walkAuthorPost(a, ts, hash, -1);
    }
    this.postStart[a] = start;
  }

  private countBetween(a: number, after: number, until: number): number {
    const tsArr = this.postTs[a];
    if (!tsArr || until <= after) return 0;
    const start = this.postStart[a]!;
    const end = this.postEnd[a]!;
    return upperBound(tsArr, start, end, until) - upperBound(tsArr, start, end, after);
  }

  /** Appends u (a standing at `offset` in u's follows) to a's followers; returns where u stands. */
  private addFollower(a: number, u: number, offset: number): number {
    const n = this.followerCount[a]!;
    let list = this.followers[a];
    let offsets = this.followerOffset[a];
    if (!list || !offsets || list.length === n) {
      list = this.followers[a] = growInt32(list ?? new Int32Array(0), n + 1);
      offsets = this.followerOffset[a] = resized(offsets, list.length);
    }
    list[n] = u;
    offsets[n] = offset;
    this.followerCount[a] = n + 1;
    return n;
  }

  /**
   * Removes the follower standing at `at` in a's list: the last one moves there, and its
   * position for a is fixed through its offset, O(1) (a mass offline of 50k users used to scan
   * each moved follower's follows: O(follows²) a user).
   */
  private removeFollower(a: number, at: number): void {
    const list = this.followers[a];
    const offsets = this.followerOffset[a];
    if (!list || !offsets) return;
    const last = this.followerCount[a]! - 1;
    if (at !== last) {
      const moved = list[last]!;
      const offset = offsets[last]!;
      list[at] = moved;
      offsets[at] = offset;
      this.followPos[this.followStart[moved]! + offset] = at;
    }
    this.followerCount[a] = last;
    if (last === 0) this.untrack(a);
  }

  /** An author nobody held follows: forget its window so memory follows what is live. */
  private untrack(a: number): void {
    this.tracked[a] = 0;
    this.postTs[a] = undefined;
    this.postHash[a] = undefined;
    this.postStart[a] = 0;
    this.postEnd[a] = 0;
    this.followers[a] = undefined;
    this.followerOffset[a] = undefined;
    if (this.authorRecRefs[a] === 0) this.authors.release(a);
  }

  private ensureUserCapacity(n: number): void {
    if (this.readAt.length >= n) return;
    this.readAt = growFloat64(this.readAt, n, -Infinity);
    this.count = growInt32(this.count, n);
    this.reported = growInt32(this.reported, n);
    this.followStart = growInt32(this.followStart, n);
    this.followLen = growInt32(this.followLen, n, -1);
    this.walkMark = growInt32(this.walkMark, n);
    const held = new Uint8Array(this.readAt.length);
    held.set(this.held);
    this.held = held;
  }

  private ensureAuthorCapacity(n: number): void {
    if (this.followerCount.length >= n) return;
    this.followerCount = growInt32(this.followerCount, n);
    this.postStart = growInt32(this.postStart, n);
    this.postEnd = growInt32(this.postEnd, n);
    this.authorMark = growInt32(this.authorMark, n);
    this.authorRecRefs = growInt32(this.authorRecRefs, n);
    const tracked = new Uint8Array(this.followerCount.length);
    tracked.set(this.tracked);
    this.tracked = tracked;
  }
}

const NO_TOPICS = new Int32Array(0);

/** Follows of released users reclaim() takes out of the follower lists per sweep, at least. */
const RECLAIM_PER_SWEEP = 100_000;

/** A copy of `array` (or zeros) exactly `length` long: kept beside a list grown by growInt32. */
function resized(array: Int32Array | undefined, length: number): Int32Array<ArrayBuffer> {
  const next = new Int32Array(length);
  if (array) next.set(array.subarray(0, Math.min(array.length, length)));
  return next;
}

function recordKey(author: string, ts: number, hash: number): string {
  return `${author}\n${ts}\n${hash}`;
}

/** First index in [lo, hi) whose value is > x. */
function upperBound(sorted: Float64Array, lo: number, hi: number, x: number): number {
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
