import { idRecord } from '@bubble/protocol';
import { RedisBadgeStates } from '../badges/redis-badge-states.js';
import type { BadgeStates } from '../badges/badge-states.js';
import { RedisChangeLog } from '../change-log/redis-change-log.js';
import {
  DEFAULT_LARGE_GROUP,
  DEFAULT_LIST_INDEX_SIZE,
} from '../conversations/conversation-order.js';
import { RedisConversations } from '../conversations/redis-conversations.js';
import { RedisCoordination } from '../coordination/redis-coordination.js';
import {
  bothCounts,
  countsOfReplies,
  KINDS_PER_COUNT,
  RedisCounters,
} from '../counters/redis-counters.js';
import type { ReadCursors } from '../cursors/read-cursors.js';
import { FEED_CURSOR, RedisReadCursors } from '../cursors/redis-read-cursors.js';
import { RedisFencedBadges } from '../fenced-badges/redis-fenced-badges.js';
import type { FollowGraph } from '../follows/follow-graph.js';
import { decodeFollowList } from '../follows/follow-list.js';
import { LegacyFollowsConversion, type LegacyConversionStep } from '../follows/legacy-follows.js';
import { RedisFollowGraph } from '../follows/redis-follow-graph.js';
import { RedisUserSources } from '../follows/redis-user-sources.js';
import type { UserSources } from '../follows/user-sources.js';
import { decodeMarks, RedisUserMarks } from '../marks/redis-user-marks.js';
import { RedisNoticeBoard } from '../notices/redis-notice-board.js';
import type { PostIndex } from '../posts/post-index.js';
import { RedisPostIndex } from '../posts/redis-post-index.js';
import { RedisPresence } from '../presence/redis-presence.js';
import { RedisRedDots } from '../red-dots/redis-red-dots.js';
import { CommandCounter } from '../redis/command-counter.js';
import { connectRedis, type RedisClient, type RedisTarget } from '../redis/connect.js';
import { RedisKeys } from '../redis/keys.js';
import { scripts, type ScriptRunner } from '../redis/scripts.js';
import { slotSpreadOf, type SlotSpread } from '../redis/slot-spread.js';
import { StoreClock, type ClockListeners } from '../store-clock.js';
import type { BubbleStore, FeedInputs, UserInputs } from './bubble-store.js';

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
  /**
   * A sources endpoint gives users' follows on demand (UserSources): follow changes of a user
   * not held store nothing, and the inactive-user drop drops follows too. Default false.
   */
  sourcesOnDemand?: boolean;
}

export class RedisStore implements BubbleStore {
  readonly engine = 'redis' as const;
  readonly keys: RedisKeys;
  readonly redis: RedisClient;
  readonly follows: FollowGraph;
  readonly topics: FollowGraph;
  readonly sources: UserSources;
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
  private readonly spread: SlotSpread;
  private readonly onDemand: boolean;
  private legacy: LegacyFollowsConversion | undefined;

  constructor(options: RedisStoreOptions) {
    this.keys = new RedisKeys(options.keyPrefix, options.pools);
    this.ownsClient = !options.client;
    const client = options.client ?? connectRedis(options);
    this.commands.watch(client);
    this.redis = client;
    const run = scripts(client);
    this.run = run;
    const spread = slotSpreadOf(client);
    this.spread = spread;
    this.pools = options.pools;
    const shared = { client, keys: this.keys };
    this.changes = new RedisChangeLog({
      ...shared,
      maxPostEvents: options.maxPostEvents,
      maxPoolEvents: options.maxPoolEvents,
    });
    const keys = this.keys;
    const onDemand = options.sourcesOnDemand ?? false;
    this.onDemand = onDemand;
    const followKeys = {
      authors: (user: string) => keys.follows(user),
      fetch: (user: string) => keys.sourcesFetch(user),
    };
    this.follows = new RedisFollowGraph(
      client,
      run,
      'a',
      'authors',
      { ...followKeys, list: followKeys.authors },
      onDemand,
    );
    this.topics = new RedisFollowGraph(
      client,
      run,
      't',
      'topics',
      { ...followKeys, list: (user) => keys.topics(user) },
      onDemand,
    );
    this.sources = new RedisUserSources(client, run, keys, onDemand, (user) =>
      this.feedInputs(user),
    );
    this.posts = new RedisPostIndex(client, run, this.keys, this.changes, spread);
    this.cursors = new RedisReadCursors(client, run, this.keys);
    this.presence = new RedisPresence({ ...shared, log: this.changes });
    this.coordination = new RedisCoordination({ ...shared, commands: this.commands });
    this.fencedBadges = new RedisFencedBadges({
      ...shared,
      sharded: spread.sharded,
      commands: this.commands,
    });
    this.badges = new RedisBadgeStates(this.redis, run, this.keys, this.fencedBadges);
    this.notices = new RedisNoticeBoard({ ...shared, log: this.changes });
    this.reddots = new RedisRedDots({ ...shared, log: this.changes });
    this.marks = new RedisUserMarks({ ...shared, log: this.changes }, { dropSources: onDemand });
    this.conversations = new RedisConversations({
      ...shared,
      spread,
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
      this.redis.get(this.keys.follows(user)),
      this.redis.get(this.keys.topics(user)),
      this.redis.hget(this.keys.cursors(user), FEED_CURSOR),
    ]);
    return this.feedOf(follows, topics, readAt);
  }

  /**
   * Converts format-1 follow SETs to format-2 lists (RedisKeys' header), one SCAN page of one
   * server a call, each user atomically: an operator upgrading runs it until `done`, before
   * traffic (a change made in between is merged, an unfollow may come back).
   */
  convertLegacyFollows(batch: number): Promise<LegacyConversionStep> {
    this.legacy ??= new LegacyFollowsConversion(this.redis, this.run, this.keys);
    return this.legacy.step(batch);
  }

  private feedOf(follows: string | null, topics: string | null, readAt: string | null): FeedInputs {
    return {
      follows: decodeFollowList(follows),
      topics: decodeFollowList(topics),
      readAt: readAt === null ? null : Number(readAt),
      held: !this.onDemand || follows !== null,
    };
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
    // A call per user in the user's slot, or a call per chunk of the batch on one server.
    const read = this.spread.map(
      users,
      INPUTS_CHUNK,
      (user) => this.run.readUserInputs(keysOf(user), args),
      (chunk) => this.run.readManyUserInputs(chunk.flatMap(keysOf), args),
    );
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
        feed: this.feedOf(follows, topics, readAt),
        marks: decodeMarks(raw),
        conversations,
        counters: rest ? bothCounts(first, rest[i]!) : first,
      };
    });
  }

  /**
   * Counted where ioredis writes them (command-counter.ts), on the store's client and the
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
