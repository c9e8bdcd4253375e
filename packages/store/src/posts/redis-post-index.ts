import type { RedisChangeLog } from '../change-log/redis-change-log.js';
import type { RedisClient } from '../redis/connect.js';
import type { RedisKeys } from '../redis/keys.js';
import type { ScriptRunner } from '../redis/scripts.js';
import { ScriptStatus } from '../redis/script-status.js';
import type { SlotSpread } from '../redis/slot-spread.js';
import type { IngestResult, Post, PostIndex, TopicPost, WindowPost } from './post-index.js';
import {
  countsInTopicWindow,
  joinTopics,
  parseTopicMember,
  splitTopics,
  topicMember,
} from './topic-windows.js';

/** Authors counted per script call on a standalone Redis: keeps each call well under 1 ms. */
const COUNT_CHUNK = 500;

/**
 * Posts and deletes are logged in the step that stores them on one Redis (the scripts append to
 * the post log). On Redis Cluster the log is in another slot: the store script also marks what
 * it stored in the author's unlogged set, the post log gets it next, and the marks go after; a
 * call cut in between leaves the marks, and its retry, answered "stored before, not logged",
 * appends the events then. Appending twice is harmless (the cores apply post events
 * idempotently); never appending would leave held users wrong.
 */
export class RedisPostIndex implements PostIndex {
  constructor(
    private readonly redis: RedisClient,
    private readonly run: ScriptRunner,
    private readonly keys: RedisKeys,
    private readonly log: RedisChangeLog,
    private readonly spread: SlotSpread,
  ) {
    this.logsAfter = spread.sharded;
    this.store = spread.sharded ? this.storePerAuthor : this.storeBatch;
    this.remove = spread.sharded ? this.removeThenLog : this.removeAndLog;
  }

  /** Cluster: the scripts cannot reach the post log, whose events are appended after them. */
  private readonly logsAfter: boolean;
  /** Stores the batch: each author's outcome per post (ScriptStatus), in the author's order. */
  private readonly store: (
    posts: readonly Post[],
    byAuthor: ReadonlyMap<string, (string | number)[]>,
    minTs: number,
  ) => Promise<Map<string, number[]>>;

  readonly remove: (
    author: string,
    id: string,
    now: number,
    minTs: number,
  ) => Promise<number | null>;

  async ingest(posts: readonly Post[], minTs: number): Promise<IngestResult> {
    const byAuthor = new Map<string, (string | number)[]>();
    for (const post of posts) {
      let triples = byAuthor.get(post.author);
      if (!triples) byAuthor.set(post.author, (triples = []));
      triples.push(post.id, post.ts, joinTopics(post.topics));
    }
    const outcomes = await this.store(posts, byAuthor, minTs);
    let accepted = 0;
    let ignored = 0;
    const stored: Post[] = [];
    const unlogged: Post[] = [];
    const seen = new Map<string, number>();
    for (const post of posts) {
      const at = seen.get(post.author) ?? 0;
      seen.set(post.author, at + 1);
      const outcome = outcomes.get(post.author)![at];
      if (outcome === ScriptStatus.Refused) {
        ignored++;
        continue;
      }
      accepted++;
      const { author, id, ts } = post;
      const stamped: Post =
        post.topics && post.topics.length > 0
          ? { author, id, ts, topics: [...post.topics] }
          : { author, id, ts };
      if (outcome === ScriptStatus.Done) stored.push(stamped);
      if (
        this.logsAfter &&
        (outcome === ScriptStatus.Done || outcome === ScriptStatus.DoneUnlogged)
      ) {
        unlogged.push(stamped);
      }
    }
    if (unlogged.length > 0) {
      // Into the topic windows before the log and the marks: a retry finds the marks and adds
      // again (ZADD NX), so a call cut anywhere leaves no post out of its topics' windows.
      await this.addToTopicWindows(unlogged, minTs);
      await this.log.appendPostEvents(
        unlogged.map(({ topics, ...post }) =>
          topics ? { kind: 'post', ...post, topics: [...topics] } : { kind: 'post', ...post },
        ),
      );
      await this.logged(unlogged.map(({ author, id }) => ({ author, mark: `p:${id}` })));
    }
    return { accepted, ignored, stored };
  }

  /** Cluster: authors live in many slots, one script call each, auto-pipelined per node. */
  private async storePerAuthor(
    _posts: readonly Post[],
    byAuthor: ReadonlyMap<string, (string | number)[]>,
    minTs: number,
  ): Promise<Map<string, number[]>> {
    const outcomes = new Map<string, number[]>();
    await Promise.all(
      [...byAuthor].map(async ([author, triples]) => {
        const result = await this.run.ingestPosts(
          [
            this.keys.posts(author),
            this.keys.deletedPosts(author),
            this.keys.unloggedPosts(author),
            this.keys.postTopics(author),
          ],
          [minTs, ...triples],
        );
        outcomes.set(author, result);
      }),
    );
    return outcomes;
  }

  /** One server holds every author, topic and the log: the whole batch, logged, in one call. */
  private async storeBatch(
    posts: readonly Post[],
    byAuthor: ReadonlyMap<string, (string | number)[]>,
    minTs: number,
  ): Promise<Map<string, number[]>> {
    const windows = new Set<string>();
    for (const post of posts) for (const topic of post.topics ?? []) windows.add(topic);
    const keys: string[] = [];
    const args: [minTs: number, maxLen: number, windows: number, ...rest: (string | number)[]] = [
      minTs,
      this.log.maxPostEvents,
      windows.size,
      ...windows,
    ];
    for (const [author, triples] of byAuthor) {
      keys.push(
        this.keys.posts(author),
        this.keys.deletedPosts(author),
        this.keys.postTopics(author),
      );
      args.push(author, triples.length / 3, ...triples);
    }
    for (const topic of windows) keys.push(this.keys.topicPosts(topic));
    keys.push(this.keys.postEvents());
    const flat = await this.run.ingestPostBatch(keys, args);
    const outcomes = new Map<string, number[]>();
    let at = 0;
    for (const [author, triples] of byAuthor) {
      outcomes.set(author, flat.slice(at, at + triples.length / 3));
      at += triples.length / 3;
    }
    return outcomes;
  }

  /** One server: the script removes and logs in one step. */
  private async removeAndLog(
    author: string,
    id: string,
    now: number,
    minTs: number,
  ): Promise<number | null> {
    const [ts, topics] = await this.run.deletePostAndLog(
      [
        this.keys.posts(author),
        this.keys.deletedPosts(author),
        this.keys.postTopics(author),
        this.keys.postEvents(),
      ],
      [author, id, now, minTs, this.log.maxPostEvents],
    );
    await this.removeFromTopicWindows(author, id, splitTopics(topics));
    return ts === null ? null : Number(ts);
  }

  /** Cluster: the log is in another slot, appended after the script, then the mark cleared. */
  private async removeThenLog(
    author: string,
    id: string,
    now: number,
    minTs: number,
  ): Promise<number | null> {
    const [ts, topics] = await this.run.deletePost(
      [
        this.keys.posts(author),
        this.keys.deletedPosts(author),
        this.keys.unloggedPosts(author),
        this.keys.postTopics(author),
      ],
      [id, now, minTs],
    );
    await this.removeFromTopicWindows(author, id, splitTopics(topics));
    if (ts === null) return null;
    await this.log.appendPostEvents([{ kind: 'delete', author, id, ts: Number(ts) }]);
    await this.logged([{ author, mark: `d:${id}` }]);
    return Number(ts);
  }

  /** Cluster: each topic window is its own slot, one script call per topic of the batch. */
  private async addToTopicWindows(posts: readonly Post[], minTs: number): Promise<void> {
    const byTopic = new Map<string, (string | number)[]>();
    for (const post of posts) {
      if (!post.topics || post.topics.length === 0) continue;
      const member = topicMember(post.author, post.id, post.topics);
      for (const topic of post.topics) {
        let pairs = byTopic.get(topic);
        if (!pairs) byTopic.set(topic, (pairs = []));
        pairs.push(post.ts, member);
      }
    }
    await Promise.all(
      [...byTopic].map(([topic, pairs]) =>
        this.run.addTopicPosts([this.keys.topicPosts(topic)], [minTs, ...pairs]),
      ),
    );
  }

  /** ZREM from each window (idempotent: a retried delete finds the topics again). */
  private async removeFromTopicWindows(
    author: string,
    id: string,
    topics: readonly string[],
  ): Promise<void> {
    if (topics.length === 0) return;
    const member = topicMember(author, id, topics);
    await Promise.all(topics.map((topic) => this.redis.zrem(this.keys.topicPosts(topic), member)));
  }

  /** Clears the unlogged marks of events now in the post log: one ZREM per author. */
  private async logged(marks: ReadonlyArray<{ author: string; mark: string }>): Promise<void> {
    const byAuthor = new Map<string, string[]>();
    for (const { author, mark } of marks) {
      let list = byAuthor.get(author);
      if (!list) byAuthor.set(author, (list = []));
      list.push(mark);
    }
    await Promise.all(
      [...byAuthor].map(([author, list]) =>
        this.redis.zrem(this.keys.unloggedPosts(author), ...list),
      ),
    );
  }

  async window(authors: readonly string[], afterTs: number): Promise<Map<string, WindowPost[]>> {
    const out = new Map<string, WindowPost[]>();
    await Promise.all(
      authors.map(async (author) => {
        const flat = await this.redis.zrangebyscore(
          this.keys.posts(author),
          `(${afterTs}`,
          '+inf',
          'WITHSCORES',
        );
        const posts: WindowPost[] = [];
        for (let i = 0; i < flat.length; i += 2)
          posts.push({ id: flat[i]!, ts: Number(flat[i + 1]) });
        out.set(author, posts);
      }),
    );
    return out;
  }

  async topicWindow(topics: readonly string[], afterTs: number): Promise<Map<string, TopicPost[]>> {
    const out = new Map<string, TopicPost[]>();
    await Promise.all(
      topics.map(async (topic) => {
        const flat = await this.redis.zrangebyscore(
          this.keys.topicPosts(topic),
          `(${afterTs}`,
          '+inf',
          'WITHSCORES',
        );
        const posts: TopicPost[] = [];
        for (let i = 0; i < flat.length; i += 2)
          posts.push(parseTopicMember(flat[i]!, Number(flat[i + 1])));
        out.set(topic, posts);
      }),
    );
    return out;
  }

  async countBetween(
    authors: readonly string[],
    afterTs: number,
    untilTs: number,
    topics: readonly string[] = [],
  ): Promise<number> {
    if (untilTs <= afterTs) return 0;
    const [byAuthors, byTopics] = await Promise.all([
      this.countAuthors(authors, afterTs, untilTs),
      this.countTopics(authors, topics, afterTs, untilTs),
    ]);
    return byAuthors + byTopics;
  }

  /**
   * The posts that reach the user through a topic only, each once (topic-windows.ts): every
   * window read in the same round trip as the authors' counts, counted here.
   */
  private async countTopics(
    authors: readonly string[],
    topics: readonly string[],
    afterTs: number,
    untilTs: number,
  ): Promise<number> {
    if (topics.length === 0) return 0;
    const topicSet = new Set(topics);
    const windows = await Promise.all(
      [...topicSet].map((topic) =>
        this.redis.zrangebyscore(this.keys.topicPosts(topic), `(${afterTs}`, untilTs),
      ),
    );
    const followed = new Set(authors);
    let total = 0;
    [...topicSet].forEach((topic, i) => {
      for (const member of windows[i]!) {
        if (countsInTopicWindow(member, topic, followed, topicSet)) total++;
      }
    });
    return total;
  }

  private async countAuthors(
    authors: readonly string[],
    afterTs: number,
    untilTs: number,
  ): Promise<number> {
    if (authors.length === 0) return 0;
    const low = `(${afterTs}`;
    // One ZCOUNT per author on a Cluster; on one server counted server-side, a call per chunk.
    const counts = await this.spread.map(
      authors,
      COUNT_CHUNK,
      (author) => this.redis.zcount(this.keys.posts(author), low, untilTs),
      async (chunk) => [
        await this.run.countPosts(
          chunk.map((author) => this.keys.posts(author)),
          [low, untilTs],
        ),
      ],
    );
    let total = 0;
    for (const count of counts) total += count;
    return total;
  }
}
