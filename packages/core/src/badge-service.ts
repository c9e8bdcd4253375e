import {
  BubbleError,
  DAY_MS,
  MAX_FUTURE_SKEW_MS,
  assertId,
  makeBadge,
  poolOf,
  type Badge,
  type BadgeCounts,
  type Clock,
  type ReadRequest,
} from '@bubble/protocol';
import type { BubbleStore, Post } from '@bubble/store';

export interface BadgeRules {
  lookbackDays: number;
  followCap: number;
  displayCap: number;
}

export const DEFAULT_RULES: Readonly<BadgeRules> = Object.freeze({
  lookbackDays: 7,
  followCap: 2000,
  displayCap: 99,
});

/** Field names of the stored badge state (docs/redis-keys.md). */
const FEED_FIELD = 'f';

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

  /** feed(u, T) of semantics.md, from the stored sources, in one batch per store. */
  async computeFeed(user: string, now: number): Promise<number> {
    const { follows, readAt } = await this.store.feedInputs(user);
    const after = Math.max(readAt ?? -Infinity, now - this.lookbackMs);
    return this.store.posts.countBetween(follows, after, now);
  }

  /** The user's badge as of now, stored so its version moves only when the counts change. */
  async badge(user: string): Promise<Badge> {
    assertId(user, 'user');
    const now = this.clock.now();
    const feed = await this.computeFeed(user, now);
    return this.stamp(user, { ...emptyCounts(), feed }, now);
  }

  async read(user: string, request: ReadRequest): Promise<Badge> {
    assertId(user, 'user');
    const now = this.clock.now();
    const target = request.scope === 'feed' ? Math.min(request.upTo ?? now, now) : now;
    const readAt = await this.store.cursors.advanceFeedReadAt(user, target);
    await this.store.changes.appendPoolEvents(this.poolOf(user), [
      { kind: 'cursor', user, readAt },
    ]);
    return this.badge(user);
  }

  poolOf(user: string): number {
    return poolOf(user, this.store.pools);
  }

  private async followsChanged(user: string): Promise<void> {
    await this.store.changes.appendPoolEvents(this.poolOf(user), [{ kind: 'follows', user }]);
  }

  /** The badge a stored or published state stands for (a core's write, a push). */
  badgeOf(state: {
    user: string;
    epoch: string;
    version: number;
    fields: Readonly<Record<string, number>>;
    computedAt: number;
  }): Badge {
    const counts = { ...emptyCounts(), feed: state.fields[FEED_FIELD] ?? 0 };
    return makeBadge(state.user, counts, state, state.computedAt, this.rules.displayCap);
  }

  private async stamp(user: string, counts: BadgeCounts, now: number): Promise<Badge> {
    const stamp = await this.store.badges.save(user, { [FEED_FIELD]: counts.feed }, now);
    return makeBadge(user, counts, stamp, now, this.rules.displayCap);
  }
}

function emptyCounts(): BadgeCounts {
  return { feed: 0, notices: 0, conversations: {}, conversationsTotal: 0, reddots: [] };
}

function selfFollow(): BubbleError {
  return new BubbleError('UB_ERR_SELF_FOLLOW', 'a user cannot follow themselves');
}
