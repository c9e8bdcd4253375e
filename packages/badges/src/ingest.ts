import { BubbleError, assertId, validatePostBatch } from '@bubble/protocol';
import type { Post } from '@bubble/store';
import type { BadgeContext } from './context.js';
import { followsChanged } from './pool-events.js';
import type { Rehydration } from './rehydration.js';

/**
 * The platform's writes of the follow graph and the posts. Each is validated whole before
 * anything is stored; a change the cores must see goes to the change logs. Posts and deletes
 * are logged by the store with the write (PostIndex). A follow change's event is a reload, so
 * it is appended even when the write changed nothing: the platform's retry of a call that
 * failed after its write then still tells the cores. A follow of a user whose sources are not
 * held stores nothing and tells no one (docs/semantics.md): the platform's answer is the truth.
 */
export class Ingest {
  constructor(
    private readonly ctx: BadgeContext,
    private readonly rehydration: Rehydration,
  ) {}

  async follow(user: string, author: string): Promise<void> {
    assertId(user, 'user');
    assertId(author, 'author');
    if (user === author) throw selfFollow();
    const { store, rules } = this.ctx;
    const outcome = await store.follows.follow(user, author, rules.followCap);
    if (outcome !== 'not-held') await followsChanged(this.ctx, user);
  }

  async unfollow(user: string, author: string): Promise<void> {
    assertId(user, 'user');
    assertId(author, 'author');
    await this.ctx.store.follows.unfollow(user, author);
    await followsChanged(this.ctx, user);
  }

  async replaceFollows(user: string, authors: readonly string[]): Promise<void> {
    assertId(user, 'user');
    const unique = [...new Set(authors)];
    for (const author of unique) assertId(author, 'author');
    if (unique.includes(user)) throw selfFollow();
    const { followCap } = this.ctx.rules;
    if (unique.length > followCap) {
      throw new BubbleError(
        'UB_ERR_FOLLOW_CAP',
        `a user may follow at most ${followCap} authors, got ${unique.length}`,
      );
    }
    await this.ctx.store.follows.replace(user, unique);
    await followsChanged(this.ctx, user);
  }

  async listFollows(user: string): Promise<string[]> {
    return [...(await this.listedSources(user)).follows].sort();
  }

  /** The user's follows and topics as the badge counts them: fetched first if not held. */
  private async listedSources(user: string): Promise<{ follows: string[]; topics: string[] }> {
    assertId(user, 'user');
    const { inputs, stale } = await this.rehydration.feedInputs(user);
    if (stale) {
      throw new BubbleError(
        'UB_ERR_UNAVAILABLE',
        "the platform's sources endpoint did not answer for this user; try again",
      );
    }
    return inputs;
  }

  /** Topic follows tell the cores as author follows do: a `follows` event, a reload. */
  async followTopic(user: string, topic: string): Promise<void> {
    assertId(user, 'user');
    assertId(topic, 'topic');
    const { store, rules } = this.ctx;
    const outcome = await store.topics.follow(user, topic, rules.topicCap);
    if (outcome !== 'not-held') await followsChanged(this.ctx, user);
  }

  async unfollowTopic(user: string, topic: string): Promise<void> {
    assertId(user, 'user');
    assertId(topic, 'topic');
    await this.ctx.store.topics.unfollow(user, topic);
    await followsChanged(this.ctx, user);
  }

  async replaceTopics(user: string, topics: readonly string[]): Promise<void> {
    assertId(user, 'user');
    const unique = [...new Set(topics)];
    for (const topic of unique) assertId(topic, 'topic');
    const { topicCap } = this.ctx.rules;
    if (unique.length > topicCap) {
      throw new BubbleError(
        'UB_ERR_FOLLOW_CAP',
        `a user may follow at most ${topicCap} topics, got ${unique.length}`,
      );
    }
    await this.ctx.store.topics.replace(user, unique);
    await followsChanged(this.ctx, user);
  }

  async listTopics(user: string): Promise<string[]> {
    return [...(await this.listedSources(user)).topics].sort();
  }

  /** All-or-nothing: one post in the future refuses the whole batch. */
  async ingestPosts(posts: readonly Post[]): Promise<{ accepted: number; ignored: number }> {
    const { store, clock, lookbackMs } = this.ctx;
    const now = clock.now();
    validatePostBatch(posts, now);
    if (posts.length === 0) return { accepted: 0, ignored: 0 };
    const { accepted, ignored } = await store.posts.ingest(
      posts.map(withUniqueTopics),
      now - lookbackMs,
    );
    return { accepted, ignored };
  }

  async deletePost(author: string, id: string): Promise<void> {
    assertId(author, 'author');
    assertId(id, 'post id');
    const { store, clock, lookbackMs } = this.ctx;
    const now = clock.now();
    const ts = await store.posts.remove(author, id, now, now - lookbackMs);
    if (ts !== null) await this.ctx.offlineJobs?.append({ kind: 'post', ts, decrease: true });
  }
}

/** A post's topics without repeats, in the order first given; none is no field. */
function withUniqueTopics(post: Post): Post {
  if (!post.topics) return post;
  const { topics, ...rest } = post;
  return topics.length === 0 ? rest : { ...rest, topics: [...new Set(topics)] };
}

function selfFollow(): BubbleError {
  return new BubbleError('UB_ERR_SELF_FOLLOW', 'a user cannot follow themselves');
}
