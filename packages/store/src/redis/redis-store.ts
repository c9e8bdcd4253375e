import { BubbleError } from '@bubble/protocol';
import type {
  BadgeFields,
  BadgeStamp,
  BadgeStates,
  BubbleStore,
  FeedInputs,
  FollowGraph,
  FollowOutcome,
  IngestResult,
  Post,
  PostIndex,
  ReadCursors,
  StoredBadge,
  WindowPost,
} from '../types.js';
import { decodeBadgeState } from '../badge-state.js';
import { Cluster } from 'ioredis';
import { connectRedis, type RedisClient, type RedisTarget } from './connect.js';
import { CommandCounter } from './ioredis-internals.js';
import { RedisKeys } from './keys.js';
import { RedisChangeLog } from './redis-change-log.js';
import { RedisCoordination } from './redis-coordination.js';
import {
  RedisConversations,
  RedisNoticeBoard,
  RedisRedDots,
  RedisUserMarks,
} from './redis-extras.js';
import { RedisFencedBadges } from './redis-fenced-badges.js';
import { RedisPresence } from './redis-presence.js';
import { scripts, type ScriptRunner } from './scripts.js';

const FEED_CURSOR = 'feed';
/** Authors counted per script call on a standalone Redis: keeps each call well under 1 ms. */
const COUNT_CHUNK = 500;

export interface RedisStoreOptions extends RedisTarget {
  keyPrefix: string;
  pools: number;
  /** Bounds of the change logs (Redis stream MAXLEN ~). */
  maxPostEvents?: number;
  maxPoolEvents?: number;
  /** Use this client instead of connecting; the store then does not close it. */
  client?: RedisClient;
}

export class RedisStore implements BubbleStore {
  readonly engine = 'redis' as const;
  readonly keys: RedisKeys;
  readonly redis: RedisClient;
  readonly follows: FollowGraph;
  readonly posts: PostIndex;
  readonly cursors: ReadCursors;
  readonly badges: BadgeStates;
  readonly pools: number;
  readonly changes: RedisChangeLog;
  readonly presence: RedisPresence;
  readonly coordination: RedisCoordination;
  readonly fencedBadges: RedisFencedBadges;
  readonly notices: RedisNoticeBoard;
  readonly reddots: RedisRedDots;
  readonly marks: RedisUserMarks;
  readonly conversations: RedisConversations;
  private readonly ownsClient: boolean;
  private readonly commands = new CommandCounter();

  constructor(options: RedisStoreOptions) {
    this.keys = new RedisKeys(options.keyPrefix, options.pools);
    this.ownsClient = !options.client;
    const client = options.client ?? connectRedis(options);
    this.commands.watch(client);
    this.redis = client;
    const run = scripts(client);
    this.follows = new RedisFollowGraph(client, run, this.keys);
    this.posts = new RedisPostIndex(client, run, this.keys);
    this.cursors = new RedisReadCursors(client, run, this.keys);
    this.pools = options.pools;
    const shared = { client, keys: this.keys };
    this.changes = new RedisChangeLog({
      ...shared,
      maxPostEvents: options.maxPostEvents,
      maxPoolEvents: options.maxPoolEvents,
    });
    this.presence = new RedisPresence({ ...shared, log: this.changes });
    this.coordination = new RedisCoordination({ ...shared, commands: this.commands });
    this.fencedBadges = new RedisFencedBadges({
      ...shared,
      sharded: client instanceof Cluster,
      commands: this.commands,
    });
    this.badges = new RedisBadgeStates(this.redis, this.keys, this.fencedBadges);
    this.notices = new RedisNoticeBoard(shared);
    this.reddots = new RedisRedDots(shared);
    this.marks = new RedisUserMarks(shared);
    this.conversations = new RedisConversations(shared);
  }

  async feedInputs(user: string): Promise<FeedInputs> {
    const [follows, readAt] = await Promise.all([
      this.redis.smembers(this.keys.follows(user)),
      this.redis.hget(this.keys.cursors(user), FEED_CURSOR),
    ]);
    return { follows, readAt: readAt === null ? null : Number(readAt) };
  }

  /**
   * Counted where ioredis writes them (ioredis-internals.ts), on the store's client and the
   * subscription connections it opens; a client handed in (options.client) is counted whole,
   * whoever sends on it.
   */
  commandsSent(): number {
    return this.commands.sent;
  }

  async ping(): Promise<void> {
    await this.redis.ping();
  }

  async close(): Promise<void> {
    if (!this.ownsClient) return;
    try {
      await this.redis.quit();
    } catch {
      this.redis.disconnect();
    }
  }
}

class RedisFollowGraph implements FollowGraph {
  constructor(
    private readonly redis: RedisClient,
    private readonly run: ScriptRunner,
    private readonly keys: RedisKeys,
  ) {}

  async follow(user: string, author: string, cap: number): Promise<FollowOutcome> {
    const result = await this.run.followAuthor([this.keys.follows(user)], [author, cap]);
    if (result === -1) {
      throw new BubbleError('UB_ERR_FOLLOW_CAP', `a user may follow at most ${cap} authors`);
    }
    return result === 1 ? 'added' : 'exists';
  }

  async unfollow(user: string, author: string): Promise<boolean> {
    return (await this.redis.srem(this.keys.follows(user), author)) === 1;
  }

  async replace(user: string, authors: readonly string[]): Promise<void> {
    await this.run.replaceFollows([this.keys.follows(user)], authors);
  }

  async list(user: string): Promise<string[]> {
    return this.redis.smembers(this.keys.follows(user));
  }
}

class RedisPostIndex implements PostIndex {
  constructor(
    private readonly redis: RedisClient,
    private readonly run: ScriptRunner,
    private readonly keys: RedisKeys,
  ) {}

  async ingest(posts: readonly Post[], minTs: number): Promise<IngestResult> {
    const byAuthor = new Map<string, (string | number)[]>();
    for (const post of posts) {
      let pairs = byAuthor.get(post.author);
      if (!pairs) byAuthor.set(post.author, (pairs = []));
      pairs.push(post.id, post.ts);
    }
    const outcomes = new Map<string, number[]>();
    if (this.redis instanceof Cluster) {
      // Authors live in many slots: one script call each, auto-pipelined per node.
      await Promise.all(
        [...byAuthor].map(async ([author, pairs]) => {
          const result = await this.run.ingestPosts(
            [this.keys.posts(author), this.keys.deletedPosts(author)],
            [minTs, ...pairs],
          );
          outcomes.set(author, result);
        }),
      );
    } else {
      // One server holds every author: the whole batch in one script call.
      const keys: string[] = [];
      const args: [minTs: number, ...postsByAuthor: (string | number)[]] = [minTs];
      for (const [author, pairs] of byAuthor) {
        keys.push(this.keys.posts(author), this.keys.deletedPosts(author));
        args.push(pairs.length / 2, ...pairs);
      }
      const flat = await this.run.ingestPostBatch(keys, args);
      let at = 0;
      for (const [author, pairs] of byAuthor) {
        outcomes.set(author, flat.slice(at, at + pairs.length / 2));
        at += pairs.length / 2;
      }
    }
    let accepted = 0;
    let ignored = 0;
    const stored: Post[] = [];
    const seen = new Map<string, number>();
    for (const post of posts) {
      const at = seen.get(post.author) ?? 0;
      seen.set(post.author, at + 1);
      const outcome = outcomes.get(post.author)![at];
      if (outcome === -1) {
        ignored++;
        continue;
      }
      accepted++;
      if (outcome === 1) stored.push({ author: post.author, id: post.id, ts: post.ts });
    }
    return { accepted, ignored, stored };
  }

  async remove(author: string, id: string, now: number, minTs: number): Promise<number | null> {
    const ts = await this.run.deletePost(
      [this.keys.posts(author), this.keys.deletedPosts(author)],
      [id, now, minTs],
    );
    return ts === null ? null : Number(ts);
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

  async countBetween(
    authors: readonly string[],
    afterTs: number,
    untilTs: number,
  ): Promise<number> {
    if (untilTs <= afterTs || authors.length === 0) return 0;
    const low = `(${afterTs}`;
    let counts: number[];
    if (this.redis instanceof Cluster) {
      // Authors live in many slots: one ZCOUNT each, auto-pipelined into one write per node.
      counts = await Promise.all(
        authors.map((author) => this.redis.zcount(this.keys.posts(author), low, untilTs)),
      );
    } else {
      // One server holds them all: count server-side, a script call per chunk of authors.
      const chunks: Promise<number>[] = [];
      for (let i = 0; i < authors.length; i += COUNT_CHUNK) {
        const keys = authors.slice(i, i + COUNT_CHUNK).map((author) => this.keys.posts(author));
        chunks.push(this.run.countPosts(keys, [low, untilTs]));
      }
      counts = await Promise.all(chunks);
    }
    let total = 0;
    for (const count of counts) total += count;
    return total;
  }
}

class RedisReadCursors implements ReadCursors {
  constructor(
    private readonly redis: RedisClient,
    private readonly run: ScriptRunner,
    private readonly keys: RedisKeys,
  ) {}

  async feedReadAt(user: string): Promise<number | null> {
    const value = await this.redis.hget(this.keys.cursors(user), FEED_CURSOR);
    return value === null ? null : Number(value);
  }

  async advanceFeedReadAt(user: string, to: number): Promise<number> {
    return Number(await this.run.advanceCursor([this.keys.cursors(user)], [FEED_CURSOR, to]));
  }
}

class RedisBadgeStates implements BadgeStates {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: RedisKeys,
    private readonly writer: RedisFencedBadges,
  ) {}

  async load(user: string): Promise<StoredBadge | null> {
    const packed = await this.redis.hget(this.keys.badgeOf(user), user);
    return packed === null ? null : decodeBadgeState(packed);
  }

  async save(user: string, fields: BadgeFields, computedAt: number): Promise<BadgeStamp> {
    return this.writer.saveUnfenced(user, fields, computedAt);
  }
}
