import { DEFAULT_LARGE_GROUP, DEFAULT_LIST_INDEX_SIZE } from '../conversation-order.js';
import {
  BubbleError,
  decodeBadgeState,
  idRecord,
  poolOf,
  type BadgeFields,
  type StoredBadge,
} from '@bubble/protocol';
import type {
  BadgeStamp,
  BadgeStateWrite,
  BadgeStates,
  BubbleStore,
  FeedInputs,
  FollowGraph,
  FollowOutcome,
  IngestResult,
  Post,
  PostIndex,
  ReadCursors,
  TopicPost,
  UserInputs,
  WindowPost,
} from '../types.js';
import {
  countsInTopicWindow,
  joinTopics,
  parseTopicMember,
  splitTopics,
  topicMember,
} from '../topic-windows.js';
import { StoreClock, type ClockListeners } from '../store-clock.js';
import { Cluster } from 'ioredis';
import { connectRedis, type RedisClient, type RedisTarget } from './connect.js';
import { CommandCounter } from './ioredis-internals.js';
import { RedisKeys } from './keys.js';
import { RedisChangeLog } from './redis-change-log.js';
import { RedisCoordination } from './redis-coordination.js';
import {
  RedisConversations,
  decodeMarks,
  RedisNoticeBoard,
  RedisRedDots,
  RedisUserMarks,
} from './redis-extras.js';
import { bothCounts, countsOfReplies, KINDS_PER_COUNT, RedisCounters } from './redis-counters.js';
import { RedisFencedBadges } from './redis-fenced-badges.js';
import { RedisPresence } from './redis-presence.js';
import { scripts, type ScriptRunner } from './scripts.js';

const FEED_CURSOR = 'feed';
/** Authors counted per script call on a standalone Redis: keeps each call well under 1 ms. */
const COUNT_CHUNK = 500;
/** Users per readManyUserInputs call on a standalone Redis: a bounded step for the server. */
const INPUTS_CHUNK = 200;

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
  readonly topics: FollowGraph;
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
  readonly counters: RedisCounters;
  /** Follows the server's TIME (on the {g} slot's shard) once syncClock() ran. */
  readonly clock: StoreClock;
  private readonly ownsClient: boolean;
  private readonly commands = new CommandCounter();
  private readonly run: ScriptRunner;

  constructor(options: RedisStoreOptions) {
    this.keys = new RedisKeys(options.keyPrefix, options.pools);
    this.ownsClient = !options.client;
    const client = options.client ?? connectRedis(options);
    this.commands.watch(client);
    this.redis = client;
    const run = scripts(client);
    this.run = run;
    this.pools = options.pools;
    const shared = { client, keys: this.keys };
    this.changes = new RedisChangeLog({
      ...shared,
      maxPostEvents: options.maxPostEvents,
      maxPoolEvents: options.maxPoolEvents,
    });
    this.follows = new RedisFollowGraph(client, run, 'authors', (user) => this.keys.follows(user));
    this.topics = new RedisFollowGraph(client, run, 'topics', (user) => this.keys.topics(user));
    this.posts = new RedisPostIndex(client, run, this.keys, this.changes);
    this.cursors = new RedisReadCursors(client, run, this.keys);
    this.presence = new RedisPresence({ ...shared, log: this.changes });
    this.coordination = new RedisCoordination({ ...shared, commands: this.commands });
    this.fencedBadges = new RedisFencedBadges({
      ...shared,
      sharded: client instanceof Cluster,
      commands: this.commands,
    });
    this.badges = new RedisBadgeStates(this.redis, run, this.keys, this.fencedBadges);
    this.notices = new RedisNoticeBoard({ ...shared, log: this.changes });
    this.reddots = new RedisRedDots({ ...shared, log: this.changes });
    this.marks = new RedisUserMarks({ ...shared, log: this.changes });
    this.conversations = new RedisConversations({
      ...shared,
      log: this.changes,
      largeGroup: options.largeGroup ?? DEFAULT_LARGE_GROUP,
      listIndexSize: options.listIndexSize ?? DEFAULT_LIST_INDEX_SIZE,
    });
    this.counters = new RedisCounters(client, this.keys);
    const clockKey = [this.keys.nodesAlive()] as const;
    this.clock = new StoreClock({ read: () => run.readClock(clockKey, []) });
  }

  async syncClock(listeners: ClockListeners = {}): Promise<void> {
    await this.clock.start(listeners);
  }

  async feedInputs(user: string): Promise<FeedInputs> {
    const [follows, topics, readAt] = await Promise.all([
      this.redis.smembers(this.keys.follows(user)),
      this.redis.smembers(this.keys.topics(user)),
      this.redis.hget(this.keys.cursors(user), FEED_CURSOR),
    ]);
    return { follows, topics, readAt: readAt === null ? null : Number(readAt) };
  }

  async userInputs(
    users: readonly string[],
    { kinds, windowMs }: { kinds: readonly string[]; windowMs: number },
  ): Promise<UserInputs[]> {
    if (users.length === 0) return [];
    const { keys } = this;
    // The script counts the first KINDS_PER_COUNT kinds; any more, counters.counts beside it.
    const counted = kinds.slice(0, KINDS_PER_COUNT);
    const more = kinds.slice(KINDS_PER_COUNT);
    const keysOf = (user: string) => {
      const events = counted.map((kind) => keys.counterEvents(user, kind));
      while (events.length < KINDS_PER_COUNT) events.push(events.at(-1) ?? keys.marks(user));
      return [
        keys.follows(user),
        keys.topics(user),
        keys.cursors(user),
        keys.marks(user),
        keys.userConversations(user),
        keys.counterState(user),
        events[0]!,
        events[1]!,
        events[2]!,
      ] as const;
    };
    const args = [FEED_CURSOR, windowMs, ...counted] as const;
    let read: Promise<Awaited<ReturnType<ScriptRunner['readUserInputs']>>[]>;
    if (this.redis instanceof Cluster) {
      // One call per user, in the user's slot.
      read = Promise.all(users.map((user) => this.run.readUserInputs(keysOf(user), args)));
    } else {
      // One server holds every user: a call per chunk of the batch.
      const chunks = [];
      for (let i = 0; i < users.length; i += INPUTS_CHUNK) {
        const chunk = users.slice(i, i + INPUTS_CHUNK);
        chunks.push(this.run.readManyUserInputs(chunk.flatMap(keysOf), args));
      }
      read = Promise.all(chunks).then((all) => all.flat());
    }
    const [replies, rest] = await Promise.all([
      read,
      more.length === 0
        ? null
        : Promise.all(users.map((user) => this.counters.counts(user, more, windowMs))),
    ]);
    return replies.map(([follows, topics, readAt, marks, conversations, counts], i) => {
      const raw = idRecord<string>();
      for (let k = 0; k < marks.length; k += 2) raw[marks[k]!] = marks[k + 1]!;
      const first = countsOfReplies([counted], [counts]);
      return {
        feed: { follows, topics, readAt: readAt === null ? null : Number(readAt) },
        marks: decodeMarks(raw),
        conversations,
        counters: rest ? bothCounts(first, rest[i]!) : first,
      };
    });
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

/** A user's follow set (of authors or of topics, one SET in the user's slot each). */
class RedisFollowGraph implements FollowGraph {
  constructor(
    private readonly redis: RedisClient,
    private readonly run: ScriptRunner,
    /** What is followed, for the cap's message. */
    private readonly noun: string,
    private readonly keyOf: (user: string) => string,
  ) {}

  async follow(user: string, author: string, cap: number): Promise<FollowOutcome> {
    const result = await this.run.followAuthor([this.keyOf(user)], [author, cap]);
    if (result === -1) {
      throw new BubbleError('UB_ERR_FOLLOW_CAP', `a user may follow at most ${cap} ${this.noun}`);
    }
    return result === 1 ? 'added' : 'exists';
  }

  async unfollow(user: string, author: string): Promise<boolean> {
    return (await this.redis.srem(this.keyOf(user), author)) === 1;
  }

  async replace(user: string, authors: readonly string[]): Promise<void> {
    await this.run.replaceFollows([this.keyOf(user)], authors);
  }

  async list(user: string): Promise<string[]> {
    return this.redis.smembers(this.keyOf(user));
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
      let triples = byAuthor.get(post.author);
      if (!triples) byAuthor.set(post.author, (triples = []));
      triples.push(post.id, post.ts, joinTopics(post.topics));
    }
    const outcomes = new Map<string, number[]>();
    const sharded = this.redis instanceof Cluster;
    if (sharded) {
      // Authors live in many slots: one script call each, auto-pipelined per node.
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
    } else {
      // One server holds every author, topic and the log: the whole batch, logged, in one call.
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
      let at = 0;
      for (const [author, triples] of byAuthor) {
        outcomes.set(author, flat.slice(at, at + triples.length / 3));
        at += triples.length / 3;
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
      const stamped: Post =
        post.topics && post.topics.length > 0
          ? { author, id, ts, topics: [...post.topics] }
          : { author, id, ts };
      if (outcome === 1) stored.push(stamped);
      if (sharded && (outcome === 1 || outcome === 2)) unlogged.push(stamped);
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

  async remove(author: string, id: string, now: number, minTs: number): Promise<number | null> {
    const [posts, deleted] = [this.keys.posts(author), this.keys.deletedPosts(author)];
    const topicsKey = this.keys.postTopics(author);
    if (!(this.redis instanceof Cluster)) {
      const [ts, topics] = await this.run.deletePostAndLog(
        [posts, deleted, topicsKey, this.keys.postEvents()],
        [author, id, now, minTs, this.log.maxPostEvents],
      );
      await this.removeFromTopicWindows(author, id, splitTopics(topics));
      return ts === null ? null : Number(ts);
    }
    const [ts, topics] = await this.run.deletePost(
      [posts, deleted, this.keys.unloggedPosts(author), topicsKey],
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
    private readonly run: ScriptRunner,
    private readonly keys: RedisKeys,
    private readonly writer: RedisFencedBadges,
  ) {}

  async load(user: string): Promise<StoredBadge | null> {
    const packed = await this.redis.hget(this.keys.badgeOf(user), user);
    return packed === null ? null : decodeBadgeState(packed);
  }

  async save(user: string, fields: BadgeFields, computedAt: number): Promise<BadgeStamp> {
    const stamp = await this.writer.saveUnfenced(user, fields, computedAt);
    // Ages from now unless it already does, or the user is online (going offline writes it).
    const pool = poolOf(user, this.keys.pools);
    await this.run.ageBadgeState(
      [this.keys.offlineSince(pool), this.keys.online(pool)],
      [user, computedAt],
    );
    return stamp;
  }

  /**
   * Per pool and computedAt, one saveBadges-8 call of all its users (decided by the script, as
   * save() is) and one ageBadgeStates-2 call: every key of each in the pool's slot.
   */
  async saveMany(writes: readonly BadgeStateWrite[]): Promise<BadgeStamp[]> {
    const stamps: BadgeStamp[] = new Array(writes.length);
    // A user written again goes in a later round, so each call names a user once.
    const rounds: Map<string, { pool: number; computedAt: number; at: number[] }>[] = [];
    const roundOf = new Map<string, number>();
    writes.forEach((write, i) => {
      const round = roundOf.get(write.user) ?? 0;
      roundOf.set(write.user, round + 1);
      const byGroup = (rounds[round] ??= new Map());
      const pool = poolOf(write.user, this.keys.pools);
      const key = `${pool}|${write.computedAt}`;
      let group = byGroup.get(key);
      if (!group) byGroup.set(key, (group = { pool, computedAt: write.computedAt, at: [] }));
      group.at.push(i);
    });
    for (const byGroup of rounds) {
      await Promise.all(
        [...byGroup.values()].map(async ({ pool, computedAt, at }) => {
          const users = at.map((i) => writes[i]!.user);
          const saved = await this.writer.saveUnfencedMany(
            pool,
            at.map((i) => writes[i]!),
            computedAt,
          );
          at.forEach((i, k) => (stamps[i] = saved[k]!));
          await this.run.ageBadgeStates(
            [this.keys.offlineSince(pool), this.keys.online(pool)],
            [computedAt, ...users],
          );
        }),
      );
    }
    return stamps;
  }

  async expireOffline(before: number, limit: number): Promise<number> {
    const { keys } = this;
    const expired = await Promise.all(
      Array.from({ length: keys.pools }, (_, pool) =>
        this.run.expireBadgeStates(
          [keys.offlineSince(pool), keys.online(pool), keys.badges(pool)],
          [before, limit],
        ),
      ),
    );
    return expired.reduce((sum, n) => sum + n, 0);
  }
}
