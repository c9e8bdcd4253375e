import { DEFAULT_LARGE_GROUP, DEFAULT_LIST_INDEX_SIZE } from '../conversation-order.js';
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
import { StoreClock, type ClockListeners } from '../store-clock.js';
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
  /** BUBBLE_LARGE_GROUP: above it a message is not written to each member's activity index. */
  largeGroup?: number;
  /** Entries each user's activity index keeps (at least the list's 100). */
  listIndexSize?: number;
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
  /** Follows the server's TIME (on the {g} slot's shard) once syncClock() ran. */
  readonly clock: StoreClock;
  private readonly ownsClient: boolean;
  private readonly commands = new CommandCounter();

  constructor(options: RedisStoreOptions) {
    this.keys = new RedisKeys(options.keyPrefix, options.pools);
    this.ownsClient = !options.client;
    const client = options.client ?? connectRedis(options);
    this.commands.watch(client);
    this.redis = client;
    const run = scripts(client);
    this.pools = options.pools;
    const shared = { client, keys: this.keys };
    this.changes = new RedisChangeLog({
      ...shared,
      maxPostEvents: options.maxPostEvents,
      maxPoolEvents: options.maxPoolEvents,
    });
    this.follows = new RedisFollowGraph(client, run, this.keys);
    this.posts = new RedisPostIndex(client, run, this.keys, this.changes);
    this.cursors = new RedisReadCursors(client, run, this.keys);
    this.presence = new RedisPresence({ ...shared, log: this.changes });
    this.coordination = new RedisCoordination({ ...shared, commands: this.commands });
    this.fencedBadges = new RedisFencedBadges({
      ...shared,
      sharded: client instanceof Cluster,
      commands: this.commands,
    });
    this.badges = new RedisBadgeStates(this.redis, this.keys, this.fencedBadges);
    this.notices = new RedisNoticeBoard({ ...shared, log: this.changes });
    this.reddots = new RedisRedDots({ ...shared, log: this.changes });
    this.marks = new RedisUserMarks({ ...shared, log: this.changes });
    this.conversations = new RedisConversations({
      ...shared,
      log: this.changes,
      largeGroup: options.largeGroup ?? DEFAULT_LARGE_GROUP,
      listIndexSize: options.listIndexSize ?? DEFAULT_LIST_INDEX_SIZE,
    });
    const clockKey = [this.keys.nodesAlive()] as const;
    this.clock = new StoreClock({ read: () => run.readClock(clockKey, []) });
  }

  async syncClock(listeners: ClockListeners = {}): Promise<void> {
    await this.clock.start(listeners);
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
    this.clock.stop();
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

/**
 * Posts and deletes are logged in the step that stores them on one Redis (the scripts append to
 * the post log). On Redis Cluster the log is in another slot: the store script also marks what
 * it stored in the author's unlogged set, the post log gets it next, and the marks go after; a
 * call cut in between leaves the marks, and its retry, answered "stored before, not logged",
 * appends the events then. Appending twice is harmless (the cores apply post events
 * idempotently); never appending would leave held users wrong.
 */
class RedisPostIndex implements PostIndex {
  constructor(
    private readonly redis: RedisClient,
    private readonly run: ScriptRunner,
    private readonly keys: RedisKeys,
    private readonly log: RedisChangeLog,
  ) {}

  async ingest(posts: readonly Post[], minTs: number): Promise<IngestResult> {
    const byAuthor = new Map<string, (string | number)[]>();
    for (const post of posts) {
      let pairs = byAuthor.get(post.author);
      if (!pairs) byAuthor.set(post.author, (pairs = []));
      pairs.push(post.id, post.ts);
    }
    const outcomes = new Map<string, number[]>();
    const sharded = this.redis instanceof Cluster;
    if (sharded) {
      // Authors live in many slots: one script call each, auto-pipelined per node.
      await Promise.all(
        [...byAuthor].map(async ([author, pairs]) => {
          const result = await this.run.ingestPosts(
            [
              this.keys.posts(author),
              this.keys.deletedPosts(author),
              this.keys.unloggedPosts(author),
            ],
            [minTs, ...pairs],
          );
          outcomes.set(author, result);
        }),
      );
    } else {
      // One server holds every author and the log: the whole batch, logged, in one script call.
      const keys: string[] = [];
      const args: [minTs: number, maxLen: number, ...postsByAuthor: (string | number)[]] = [
        minTs,
        this.log.maxPostEvents,
      ];
      for (const [author, pairs] of byAuthor) {
        keys.push(this.keys.posts(author), this.keys.deletedPosts(author));
        args.push(author, pairs.length / 2, ...pairs);
      }
      keys.push(this.keys.postEvents());
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
    const unlogged: Post[] = [];
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
      const { author, id, ts } = post;
      if (outcome === 1) stored.push({ author, id, ts });
      if (sharded && (outcome === 1 || outcome === 2)) unlogged.push({ author, id, ts });
    }
    if (unlogged.length > 0) {
      await this.log.appendPostEvents(unlogged.map((post) => ({ kind: 'post', ...post })));
      await this.logged(unlogged.map(({ author, id }) => ({ author, mark: `p:${id}` })));
    }
    return { accepted, ignored, stored };
  }

  async remove(author: string, id: string, now: number, minTs: number): Promise<number | null> {
    const [posts, deleted] = [this.keys.posts(author), this.keys.deletedPosts(author)];
    if (!(this.redis instanceof Cluster)) {
      const ts = await this.run.deletePostAndLog(
        [posts, deleted, this.keys.postEvents()],
        [author, id, now, minTs, this.log.maxPostEvents],
      );
      return ts === null ? null : Number(ts);
    }
    const ts = await this.run.deletePost(
      [posts, deleted, this.keys.unloggedPosts(author)],
      [id, now, minTs],
    );
    if (ts === null) return null;
    await this.log.appendPostEvents([{ kind: 'delete', author, id, ts: Number(ts) }]);
    await this.logged([{ author, mark: `d:${id}` }]);
    return Number(ts);
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
