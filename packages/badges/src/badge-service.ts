import {
  BubbleError,
  DAY_MS,
  HOUR_MS,
  MAX_FUTURE_SKEW_MS,
  assertId,
  LIMITS,
  displayTotal as displayOf,
  makeBadge,
  poolOf,
  type Badge,
  type BadgeCounts,
  type Clock,
  type ReadRequest,
} from '@bubble/protocol';
import type {
  BubbleStore,
  ConversationMessage,
  Membership,
  PoolEvent,
  Post,
  StoredBadge,
} from '@bubble/store';
import { readStoredExtras } from './stored-extras.js';
import { decodeFields, encodeFields, shownReddots, type ExtraCounts } from './badge-fields.js';

export interface BadgeRules {
  lookbackDays: number;
  followCap: number;
  displayCap: number;
  inactiveDays: number;
}

/** How stale a user's recorded last sight may be: the stores write it at most once an hour. */
const SIGHT_RESOLUTION_MS = HOUR_MS;

export const DEFAULT_RULES: Readonly<BadgeRules> = Object.freeze({
  lookbackDays: 7,
  followCap: 2000,
  displayCap: 99,
  inactiveDays: 30,
});

/** An entry of GET /v1/conversations. */
export interface ConversationListItem {
  id: string;
  unread: number;
  maxSeq: number;
  lastTs: number;
  preview: Record<string, unknown> | null;
  muted: boolean;
}

/** Whether a call counts as the user being seen (docs/semantics.md: end-user calls only). */
export interface BadgeCallOptions {
  seen?: boolean;
}

/**
 * The badge rules of docs/semantics: validation of every write, and the on-demand
 * ("cold start") computation of a user's badge from the stored sources.
 */
export class BadgeService {
  readonly rules: Readonly<BadgeRules>;
  private readonly lookbackMs: number;

  constructor(
    readonly store: BubbleStore,
    readonly clock: Clock,
    rules: Partial<BadgeRules> = {},
  ) {
    this.rules = Object.freeze({ ...DEFAULT_RULES, ...rules });
    this.lookbackMs = this.rules.lookbackDays * DAY_MS;
  }

  async follow(user: string, author: string): Promise<void> {
    assertId(user, 'user');
    assertId(author, 'author');
    if (user === author) throw selfFollow();
    if ((await this.store.follows.follow(user, author, this.rules.followCap)) === 'added') {
      await this.followsChanged(user);
    }
  }

  async unfollow(user: string, author: string): Promise<void> {
    assertId(user, 'user');
    assertId(author, 'author');
    if (await this.store.follows.unfollow(user, author)) await this.followsChanged(user);
  }

  async replaceFollows(user: string, authors: readonly string[]): Promise<void> {
    assertId(user, 'user');
    const unique = [...new Set(authors)];
    for (const author of unique) assertId(author, 'author');
    if (unique.includes(user)) throw selfFollow();
    if (unique.length > this.rules.followCap) {
      throw new BubbleError(
        'UB_ERR_FOLLOW_CAP',
        `a user may follow at most ${this.rules.followCap} authors, got ${unique.length}`,
      );
    }
    await this.store.follows.replace(user, unique);
    await this.followsChanged(user);
  }

  async listFollows(user: string): Promise<string[]> {
    assertId(user, 'user');
    return (await this.store.follows.list(user)).sort();
  }

  /** All-or-nothing: one post in the future refuses the whole batch. */
  async ingestPosts(posts: readonly Post[]): Promise<{ accepted: number; ignored: number }> {
    const now = this.clock.now();
    for (const post of posts) {
      assertId(post.author, 'author');
      assertId(post.id, 'post id');
      if (!Number.isSafeInteger(post.ts) || post.ts < 0) {
        throw new BubbleError('UB_ERR_BAD_REQUEST', 'ts must be a non-negative integer of ms');
      }
      if (post.ts > now + MAX_FUTURE_SKEW_MS) {
        throw new BubbleError(
          'UB_ERR_FUTURE_TS',
          `post ${post.author}/${post.id} has ts ${post.ts}, more than 60 s after now (${now})`,
        );
      }
    }
    if (posts.length === 0) return { accepted: 0, ignored: 0 };
    const { accepted, ignored, stored } = await this.store.posts.ingest(
      posts,
      now - this.lookbackMs,
    );
    if (stored.length > 0) {
      await this.store.changes.appendPostEvents(stored.map((post) => ({ kind: 'post', ...post })));
    }
    return { accepted, ignored };
  }

  async deletePost(author: string, id: string): Promise<void> {
    assertId(author, 'author');
    assertId(id, 'post id');
    const now = this.clock.now();
    const ts = await this.store.posts.remove(author, id, now, now - this.lookbackMs);
    if (ts !== null)
      await this.store.changes.appendPostEvents([{ kind: 'delete', author, id, ts }]);
  }

  /**
   * Online until `ttlMs` from now (or offline). A user coming online gets their badge computed
   * at once; their pool's core picks them up from the change log.
   */
  async setPresence(user: string, online: boolean, ttlMs: number): Promise<void> {
    assertId(user, 'user');
    if (!online) {
      await this.store.presence.setOffline(user);
      return;
    }
    const [change] = await this.store.presence.setOnline([{ user, ttlMs }], this.clock.now());
    if (change?.changed) await this.badge(user);
  }

  /** feed(u, T) of docs/semantics.md, from the stored sources, in one batch per store. */
  async computeFeed(user: string, now: number): Promise<number> {
    const { follows, readAt } = await this.store.feedInputs(user);
    const after = Math.max(readAt ?? -Infinity, now - this.lookbackMs);
    return this.store.posts.countBetween(follows, after, now);
  }

  /** Notices, conversations and red dots of docs/semantics.md, from the stored sources. */
  async computeExtras(user: string): Promise<ExtraCounts> {
    return (await readStoredExtras(this.store, user)).extras;
  }

  /**
   * The user's badge as of now, computed from the stored sources and stored, so its version
   * moves only when a count changes. `seen` marks an end-user call (the notice cursor starts).
   */
  async badge(user: string, options: BadgeCallOptions = {}): Promise<Badge> {
    assertId(user, 'user');
    if (options.seen) await this.see(user);
    const now = this.clock.now();
    const [feed, extras] = await Promise.all([
      this.computeFeed(user, now),
      this.computeExtras(user),
    ]);
    return this.stamp(user, encodeFields(feed, extras), now);
  }

  /** A read of docs/semantics.md by the user themselves; answers the badge after it. */
  async read(user: string, request: ReadRequest): Promise<Badge> {
    assertId(user, 'user');
    // Only a read answered with a badge sees the user: one refused (not a member) must not
    // start a new user's notice cursor. A conversation read touches no notice cursor, so it
    // sees the user once it succeeded; every other scope first (a notices read moves `seen`).
    if (request.scope !== 'conversation') await this.see(user);
    const { store } = this;
    const now = this.clock.now();
    const events: PoolEvent[] = [];
    const readFeed = async (to: number) => {
      const readAt = await store.cursors.advanceFeedReadAt(user, to);
      events.push({ kind: 'cursor', user, readAt });
    };
    switch (request.scope) {
      case 'feed':
        await readFeed(Math.min(request.upTo ?? now, now));
        break;
      case 'notices':
        await store.marks.advanceSeen(user, request.upTo ?? (await store.notices.highestId()));
        events.push({ kind: 'marks', user });
        break;
      case 'conversation': {
        assertId(request.id, 'conversation');
        const cursor = await store.conversations.read(request.id, user, request.seq);
        if (cursor === null) throw notMember(request.id);
        await this.see(user);
        events.push({ kind: 'marks', user });
        break;
      }
      case 'reddot':
        assertId(request.name, 'red dot');
        await store.marks.click(user, [request.name], now);
        events.push({ kind: 'marks', user });
        break;
      case 'all': {
        const [highest, marked, memberships] = await Promise.all([
          store.notices.highestId(),
          store.reddots.all(),
          store.conversations.memberships(user),
        ]);
        await Promise.all([
          readFeed(now),
          store.marks.advanceSeen(user, highest),
          store.marks.click(user, Object.keys(marked), now),
          ...memberships.map((m) => store.conversations.read(m.conversation, user)),
        ]);
        events.push({ kind: 'marks', user });
        break;
      }
    }
    await store.changes.appendPoolEvents(this.poolOf(user), events);
    return this.badge(user);
  }

  /** POST /v1/users/{user}/badge/reset: recomputed from the stored sources, pools told to reload. */
  async reset(user: string): Promise<Badge> {
    assertId(user, 'user');
    await this.store.changes.appendPoolEvents(this.poolOf(user), [
      { kind: 'follows', user },
      { kind: 'marks', user },
    ]);
    return this.badge(user);
  }

  /** The cursors and per-source contributions behind the user's badge, as of now. */
  async explain(user: string): Promise<BadgeExplanation> {
    assertId(user, 'user');
    const { store } = this;
    const now = this.clock.now();
    const [inputs, marks, memberships, marked, highest, stored] = await Promise.all([
      store.feedInputs(user),
      store.marks.state(user),
      store.conversations.memberships(user),
      store.reddots.all(),
      store.notices.highestId(),
      store.badges.load(user),
    ]);
    const from = Math.max(inputs.readAt ?? -Infinity, now - this.lookbackMs);
    const [feed, notices] = await Promise.all([
      store.posts.countBetween(inputs.follows, from, now),
      marks.seen === null ? 0 : store.notices.countAfter(marks.seen),
    ]);
    const conversations = sortedByActivity(memberships).map((m) => ({
      id: m.conversation,
      maxSeq: m.maxSeq,
      readSeq: m.readSeq,
      unread: Math.max(0, m.maxSeq - m.readSeq),
      muted: m.muted,
      counted: !m.muted,
    }));
    const shown = new Set(shownReddots(marked, marks.clicks));
    const reddots = Object.keys(marked)
      .sort()
      .map((name) => ({
        name,
        markedAt: marked[name]!,
        clickedAt: marks.clicks[name] ?? null,
        shown: shown.has(name),
      }));
    const conversationsTotal = conversations.reduce((sum, c) => sum + (c.muted ? 0 : c.unread), 0);
    const total = feed + notices + conversationsTotal;
    return {
      user,
      now,
      feed: {
        readAt: inputs.readAt,
        countsAfter: from,
        lookbackDays: this.rules.lookbackDays,
        follows: inputs.follows.length,
        contribution: feed,
      },
      notices: {
        seen: marks.seen,
        highestPublished: highest,
        contribution: notices,
      },
      conversations: { list: conversations, contribution: conversationsTotal },
      reddots: { list: reddots, counted: false },
      total,
      display: displayOf(total, this.rules.displayCap),
      stored: stored ? storedSummary(stored) : null,
    };
  }

  // ---- system notices and red dots: O(1) writes, the cores follow the shared log ----

  async publishNotice(id: number, ts?: number): Promise<void> {
    assertPositiveId(id, 'notice id');
    if (await this.store.notices.publish(id, ts ?? this.clock.now())) {
      await this.store.changes.appendSharedEvents([{ kind: 'notice', id, live: true }]);
    }
  }

  async withdrawNotice(id: number): Promise<void> {
    assertPositiveId(id, 'notice id');
    if (await this.store.notices.withdraw(id)) {
      await this.store.changes.appendSharedEvents([{ kind: 'notice', id, live: false }]);
    }
  }

  async markReddot(name: string, ts?: number): Promise<void> {
    assertId(name, 'red dot');
    const at = ts ?? this.clock.now();
    await this.store.reddots.mark(name, at);
    await this.store.changes.appendSharedEvents([{ kind: 'reddot', name, ts: at }]);
  }

  async clearReddot(name: string): Promise<void> {
    assertId(name, 'red dot');
    if (await this.store.reddots.clear(name)) {
      await this.store.changes.appendSharedEvents([{ kind: 'reddot', name, ts: null }]);
    }
  }

  /** Drops the marks of users unseen for BUBBLE_INACTIVE_DAYS, at most `limit` per call. */
  async dropInactiveUsers(limit: number): Promise<string[]> {
    // A sight is recorded at most once an hour (the stores' throttle), so the recorded one may
    // be up to an hour older than the last: never drop a user seen within inactiveDays.
    const cutoff = this.clock.now() - this.rules.inactiveDays * DAY_MS - SIGHT_RESOLUTION_MS;
    const dropped = await this.store.marks.dropInactive(cutoff, limit);
    await this.marksChanged(dropped);
    return dropped;
  }

  // ---- conversations ----

  async replaceMembers(conversation: string, members: readonly string[]): Promise<void> {
    assertId(conversation, 'conversation');
    const unique = uniqueIds(members, 'member');
    const { added, removed } = await this.store.conversations.replaceMembers(conversation, unique);
    await this.marksChanged([...added, ...removed]);
  }

  async addMembers(conversation: string, members: readonly string[]): Promise<void> {
    assertId(conversation, 'conversation');
    const unique = uniqueIds(members, 'member');
    const { added } = await this.store.conversations.addMembers(conversation, unique);
    await this.marksChanged(added);
  }

  async removeMember(conversation: string, user: string): Promise<void> {
    assertId(conversation, 'conversation');
    assertId(user, 'member');
    if (await this.store.conversations.removeMember(conversation, user)) {
      await this.marksChanged([user]);
    }
  }

  async dissolve(conversation: string): Promise<void> {
    assertId(conversation, 'conversation');
    await this.marksChanged(await this.store.conversations.dissolve(conversation));
  }

  /** 404 for a conversation never created or dissolved; the batch is all-or-nothing. */
  async ingestMessages(
    conversation: string,
    messages: ReadonlyArray<Omit<ConversationMessage, 'ts'> & { ts?: number | undefined }>,
  ): Promise<{ accepted: number }> {
    assertId(conversation, 'conversation');
    const now = this.clock.now();
    const batch: ConversationMessage[] = messages.map((m) => {
      assertPositiveId(m.seq, 'seq');
      assertId(m.from, 'sender');
      return { seq: m.seq, from: m.from, ts: m.ts ?? now, preview: m.preview };
    });
    if (batch.length === 0) return { accepted: 0 };
    const result = await this.store.conversations.ingest(conversation, batch);
    if (!result) {
      throw new BubbleError('UB_ERR_NOT_FOUND', `conversation ${conversation} does not exist`);
    }
    await this.store.changes.appendSharedEvents([
      { kind: 'messages', conversation, maxSeq: result.maxSeq, senders: result.senders },
    ]);
    return { accepted: batch.length };
  }

  async setMuted(user: string, conversation: string, muted: boolean): Promise<void> {
    assertId(user, 'user');
    assertId(conversation, 'conversation');
    if (!(await this.store.conversations.setMuted(conversation, user, muted))) {
      throw notMember(conversation);
    }
    await this.marksChanged([user]);
  }

  /** Newest activity first, ties by the higher seq; at most `limit` (≤ 100). */
  async conversationList(user: string, limit: number): Promise<ConversationListItem[]> {
    assertId(user, 'user');
    const memberships = await this.store.conversations.memberships(user);
    return sortedByActivity(memberships)
      .slice(0, Math.min(limit, LIMITS.maxConversationList))
      .map((m) => ({
        id: m.conversation,
        unread: Math.max(0, m.maxSeq - m.readSeq),
        maxSeq: m.maxSeq,
        lastTs: m.lastTs,
        preview: m.preview,
        muted: m.muted,
      }));
  }

  poolOf(user: string): number {
    return poolOf(user, this.store.pools);
  }

  private async followsChanged(user: string): Promise<void> {
    await this.store.changes.appendPoolEvents(this.poolOf(user), [{ kind: 'follows', user }]);
  }

  /** Tells the pools of `users` to reload their marks and conversations: one call per pool. */
  private async marksChanged(users: readonly string[]): Promise<void> {
    const byPool = new Map<number, PoolEvent[]>();
    for (const user of users) {
      const pool = this.poolOf(user);
      let events = byPool.get(pool);
      if (!events) byPool.set(pool, (events = []));
      events.push({ kind: 'marks', user });
    }
    await Promise.all(
      [...byPool].map(([pool, events]) => this.store.changes.appendPoolEvents(pool, events)),
    );
  }

  /** The first sight of a user starts their notice cursor at the highest id published. */
  private async see(user: string): Promise<void> {
    const { first } = await this.store.marks.see(user, this.clock.now(), () =>
      this.store.notices.highestId(),
    );
    // A core holding the user counted no notices while they were unseen.
    if (first) await this.marksChanged([user]);
  }

  /** The badge a stored or published state stands for (a core's write, a push). */
  badgeOf(state: {
    user: string;
    epoch: string;
    version: number;
    fields: Readonly<Record<string, number>>;
    computedAt: number;
  }): Badge {
    const counts = decodeFields(state.fields);
    return makeBadge(state.user, counts, state, state.computedAt, this.rules.displayCap);
  }

  private async stamp(user: string, fields: Record<string, number>, now: number): Promise<Badge> {
    const stamp = await this.store.badges.save(user, fields, now);
    return makeBadge(user, decodeFields(fields), stamp, now, this.rules.displayCap);
  }
}

export interface BadgeExplanation {
  user: string;
  now: number;
  feed: {
    readAt: number | null;
    /** Posts after this ts count: max(readAt, now − lookback). */
    countsAfter: number;
    lookbackDays: number;
    follows: number;
    contribution: number;
  };
  notices: { seen: number | null; highestPublished: number; contribution: number };
  conversations: {
    list: Array<{
      id: string;
      maxSeq: number;
      readSeq: number;
      unread: number;
      muted: boolean;
      counted: boolean;
    }>;
    contribution: number;
  };
  reddots: {
    list: Array<{ name: string; markedAt: number; clickedAt: number | null; shown: boolean }>;
    counted: false;
  };
  total: number;
  display: string;
  /** The badge state last stored (what pushes and polls serve), for comparison. */
  stored: { epoch: string; version: number; computedAt: number; badge: BadgeCounts } | null;
}

function storedSummary(stored: StoredBadge) {
  return {
    epoch: stored.epoch,
    version: stored.version,
    computedAt: stored.computedAt,
    badge: decodeFields(stored.fields),
  };
}

function sortedByActivity(memberships: readonly Membership[]): Membership[] {
  return [...memberships].sort(
    (a, b) =>
      b.lastTs - a.lastTs ||
      b.maxSeq - a.maxSeq ||
      (a.conversation < b.conversation ? -1 : a.conversation > b.conversation ? 1 : 0),
  );
}

function uniqueIds(ids: readonly string[], what: string): string[] {
  const unique = [...new Set(ids)];
  for (const id of unique) assertId(id, what);
  return unique;
}

function assertPositiveId(value: unknown, what: string): void {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new BubbleError('UB_ERR_BAD_REQUEST', `${what} must be a positive safe integer`);
  }
}

function notMember(conversation: string): BubbleError {
  return new BubbleError(
    'UB_ERR_FORBIDDEN',
    `the caller is not a member of conversation ${conversation}`,
  );
}

function selfFollow(): BubbleError {
  return new BubbleError('UB_ERR_SELF_FOLLOW', 'a user cannot follow themselves');
}
