import { poolOf } from '@bubble/protocol';

/** A key prefix may not contain braces: the first {…} of a key is its Redis Cluster hash tag. */
export const KEY_PREFIX_PATTERN = /^[A-Za-z0-9_.:-]{1,32}$/;

/**
 * Every Redis key bubble uses is built here and nowhere else (docs/redis-keys.md).
 * Hash tags put what one command or script touches into one slot:
 *   {u:<user>}   a user's own sources (follows, topic follows, the fetch of them, cursors)
 *   {a:<author>} an author's posts, their tombstones and topics
 *   {t:<topic>}  a topic's window of posts
 *   {p:<pool>}   a pool's online users, change log, fencing counter and badge states
 *   {g}          cluster-wide coordination, the change logs, notices and red dots
 *   {c:<conv>}   a conversation's seq, preview and members' cursors
 * Keys of different lifecycles differ before the tag: `marks:` (dropped for inactive users),
 * `im:` (deleted with the conversation or the membership), `notice:`/`reddot:` (global).
 *
 * Follow lists, format v2: a user's followed authors are ONE STRING, the ids joined by ','
 * (the id grammar has no ','), at `{u:<user>}:follows:v2`; topic follows likewise at
 * `{u:<user>}:topics:v2`. A string costs about the ids' bytes (a SET of 243 six-byte ids ~41 B a
 * follow, this ~8 B); the scripts check membership and the cap by scanning it, bounded by the
 * cap. The new names keep a string command from ever meeting a format-1 SET (`:follows`,
 * `:topics`), which convertLegacyFollows turns into v2. With a sources endpoint the authors
 * string's existence is what "the user's sources are held" means (an empty string: held,
 * following nobody), and `{u:<user>}:fetching` marks a fetch of them in flight.
 */
export class RedisKeys {
  constructor(
    readonly prefix: string,
    readonly pools: number,
  ) {
    if (!KEY_PREFIX_PATTERN.test(prefix)) {
      throw new Error(`key prefix ${JSON.stringify(prefix)} must match ${KEY_PREFIX_PATTERN}`);
    }
    if (!Number.isInteger(pools) || pools < 1) throw new Error('pools must be a positive integer');
  }

  /** STRING: the authors a user follows, joined by ','; on demand, present = held (format v2). */
  follows(user: string): string {
    return `${this.prefix}:{u:${user}}:follows:v2`;
  }

  /** STRING: the topics a user follows, joined by ',' (format v2). */
  topics(user: string): string {
    return `${this.prefix}:{u:${user}}:topics:v2`;
  }

  /**
   * HASH with a ttl: a fetch of the user's sources from the platform is in flight; holds the
   * follow changes received since, applied on top of the answer (includes/recordedFollows.lua).
   */
  sourcesFetch(user: string): string {
    return `${this.prefix}:{u:${user}}:fetching`;
  }

  /** SET of format 1 (before v2): the authors a user follows. Read only to convert it. */
  legacyFollows(user: string): string {
    return `${this.prefix}:{u:${user}}:follows`;
  }

  /** SET of format 1 (before v2): the topics a user follows. Read only to convert it. */
  legacyTopics(user: string): string {
    return `${this.prefix}:{u:${user}}:topics`;
  }

  /** A SCAN pattern matching every per-user key of the {u:…} tag (legacy lists among them). */
  userTaggedPattern(): string {
    return `${this.prefix}:{u:*}:*`;
  }

  /** The user whose format-1 follow or topic SET `key` is, or null for any other key. */
  legacyListOwner(key: string): string | null {
    const head = `${this.prefix}:{u:`;
    if (!key.startsWith(head)) return null;
    const end = key.indexOf('}:', head.length);
    const rest = end < 0 ? '' : key.slice(end + 2);
    return rest === 'follows' || rest === 'topics' ? key.slice(head.length, end) : null;
  }

  cursors(user: string): string {
    return `${this.prefix}:{u:${user}}:cursors`;
  }

  posts(author: string): string {
    return `${this.prefix}:{a:${author}}:posts`;
  }

  deletedPosts(author: string): string {
    return `${this.prefix}:{a:${author}}:deleted`;
  }

  /** HASH post id → its topics (space-separated), for the author's posts and tombstones that carry some. */
  postTopics(author: string): string {
    return `${this.prefix}:{a:${author}}:topics`;
  }

  /** ZSET "<author> <id> <topics>" → ts: the posts carrying the topic in the lookback window. */
  topicPosts(topic: string): string {
    return `${this.prefix}:{t:${topic}}:posts`;
  }

  /**
   * ZSET "p:<id>" / "d:<id>" → the post's ts (Redis Cluster only): an author's posts and deletes
   * stored but not yet appended to the post log, which a retried call appends.
   */
  unloggedPosts(author: string): string {
    return `${this.prefix}:{a:${author}}:unlogged`;
  }

  /** HASH user → packed badge state, for the users of one pool (saveBadges-8.lua). */
  badges(pool: number): string {
    return `${this.prefix}:{p:${pool}}:badges`;
  }

  /** The key holding `user`'s badge state (a field of it named after the user). */
  badgeOf(user: string): string {
    return this.badges(poolOf(user, this.pools));
  }

  /** ZSET user → presence expiry (ms). */
  online(pool: number): string {
    return `${this.prefix}:{p:${pool}}:online`;
  }

  /**
   * ZSET user → when their stored badge state started to age (they went offline, or a gateway
   * wrote it while they were not online): what the lookback expiry walks (expireBadgeStates-3).
   */
  offlineSince(pool: number): string {
    return `${this.prefix}:{p:${pool}}:offline`;
  }

  /** STREAM of PoolEvents for the pool's owner. */
  poolEvents(pool: number): string {
    return `${this.prefix}:{p:${pool}}:events`;
  }

  /** STRING counter: the pool's fencing token. */
  fence(pool: number): string {
    return `${this.prefix}:{p:${pool}}:fence`;
  }

  /**
   * SET of users whose badge state an unfenced write (a gateway's) changed since the pool's
   * owner last wrote them: the users whose stored state a core's belief may not match.
   */
  touched(pool: number): string {
    return `${this.prefix}:{p:${pool}}:touched`;
  }

  /** STRING counter: badge writes refused for carrying an old fencing token. */
  staleWrites(pool: number): string {
    return `${this.prefix}:{p:${pool}}:stale`;
  }

  /** Pub/sub channel of the pool's badge changes (SPUBLISH on Redis Cluster). */
  badgeChannel(pool: number): string {
    return `${this.prefix}:{p:${pool}}:changes`;
  }

  /** Pub/sub channel of a pool's fenced (core) writes: an audit trail, decoded by no role. */
  writtenChannel(pool: number): string {
    return `${this.prefix}:{p:${pool}}:written`;
  }

  /** HASH user → "gateway=expiry;…": the gateways a pool's users' changes are routed to. */
  routes(pool: number): string {
    return `${this.prefix}:{p:${pool}}:routes`;
  }

  /** Pub/sub channel of the changes of the pool's users held by one gateway. */
  gatewayChannel(pool: number, gateway: string): string {
    return `${this.gatewayChannelPrefix(pool)}${gateway}`;
  }

  gatewayChannelPrefix(pool: number): string {
    return `${this.prefix}:{p:${pool}}:to:`;
  }

  /**
   * Pub/sub channels of a pool's list signals: the pool's users held by a gateway whose
   * conversation lists may have changed (signalLists-1.lua); a gateway's is this plus its id.
   */
  listChannelPrefix(pool: number): string {
    return `${this.prefix}:{p:${pool}}:ls:`;
  }

  /**
   * HASH gateway → the number of messages published on the gateway's channel of the pool: what
   * a gateway compares with the numbers it heard to find a lost message.
   */
  sentToGateways(pool: number): string {
    return `${this.prefix}:{p:${pool}}:sent`;
  }

  /** Redlock resource of the pool; lives on the lock quorum's servers. */
  poolLock(pool: number): string {
    return `${this.prefix}:lock:{p:${pool}}`;
  }

  /** STREAM of PostEvents every core follows. */
  postEvents(): string {
    return `${this.prefix}:{g}:posts`;
  }

  /** STREAM of SharedEvents (notices, red dots, messages) every core follows. */
  sharedEvents(): string {
    return `${this.prefix}:{g}:shared`;
  }

  /** ZSET live notice id → id; STRING the highest id ever published. */
  notices(): string {
    return `${this.prefix}:notice:{g}:live`;
  }

  noticeHighest(): string {
    return `${this.prefix}:notice:{g}:highest`;
  }

  /** HASH red dot name → G(name). */
  reddots(): string {
    return `${this.prefix}:reddot:{g}:marked`;
  }

  /** HASH of one user's marks: seen (notice cursor), at (last sight), r:<name> (click time). */
  marks(user: string): string {
    return `${this.prefix}:marks:{u:${user}}`;
  }

  /**
   * Everything kept for `user` alone that the inactive-user job drops (docs/semantics.md,
   * Lifecycle), the marks first (their `at` decides): every key here carries the user's tag
   * {u:<user>}, so one script (dropInactiveUser-n) drops them together. A new per-user key of
   * that lifecycle is added here. Beside these the job deletes the user's field of their pool's
   * badge states and offline index (another slot). Kept: memberships (im:{u:…}) and
   * conversation cursors (in the conversation's slot), and the follows and topic follows unless
   * `sources` (a sources endpoint can give them back: docs/semantics.md, "Where a user's sources
   * live"), which drops them and any fetch marker too.
   */
  inactiveUserKeys(user: string, sources = false): [marks: string, ...rest: string[]] {
    const keys: [string, ...string[]] = [this.marks(user), this.cursors(user)];
    if (sources) keys.push(this.follows(user), this.topics(user), this.sourcesFetch(user));
    return keys;
  }

  /** ZSET user → last sight (ms), throttled: what the inactive-user job walks. */
  lastSeen(): string {
    return `${this.prefix}:marks:{g}:lastseen`;
  }

  /**
   * HASH of the feed digest's current pass over lastSeen (packages/events/src/digest): its
   * start, size, cursor and count handed out. In lastSeen's slot: one script reads both.
   */
  digestPass(): string {
    return `${this.prefix}:digest:{g}:pass`;
  }

  /**
   * HASH of one user's interaction counters: `c` the store time of the last count, `l:<kind>`
   * the kind's last arrival stamp, `r:<kind>` its readAt (ingestCounters-3.lua).
   */
  counterState(user: string): string {
    return `${this.prefix}:counters:{u:${user}}:state`;
  }

  /** ZSET event id → arrivedAt: one user's events of one kind. */
  counterEvents(user: string, kind: string): string {
    return `${this.prefix}:counters:{u:${user}}:k:${kind}`;
  }

  /** ZSET "<kind>:<id>" → retraction time: what a retried ingest must not bring back. */
  counterRetracted(user: string): string {
    return `${this.prefix}:counters:{u:${user}}:retracted`;
  }

  /** HASH maxSeq, lastTs, preview: one conversation's shared state. */
  conversation(conversation: string): string {
    return `${this.prefix}:im:{c:${conversation}}:meta`;
  }

  /** HASH member → "<readSeq>" or "<readSeq>m" (muted). */
  conversationMembers(conversation: string): string {
    return `${this.prefix}:im:{c:${conversation}}:members`;
  }

  /**
   * SET of the users a membership change of the conversation owes a `marks` event in their pool's
   * log (another slot): emptied once appended; a retried change appends what is left.
   */
  conversationUnlogged(conversation: string): string {
    return `${this.prefix}:im:{c:${conversation}}:unlogged`;
  }

  /**
   * ZSET conversation → -lastTs: the user's bounded activity index of their conversations of at
   * most BUBBLE_LARGE_GROUP members (the most recent ones), what their list is read from.
   */
  userActivity(user: string): string {
    return `${this.prefix}:im:{u:${user}}:activity`;
  }

  /** HASH conversation → the seq its activity entry is from; `~trimmed` once trimmed. */
  userActivitySeqs(user: string): string {
    return `${this.prefix}:im:{u:${user}}:activity-seqs`;
  }

  /** SET of the user's conversations above BUBBLE_LARGE_GROUP members (merged at read time). */
  userLargeConversations(user: string): string {
    return `${this.prefix}:im:{u:${user}}:large`;
  }

  /** SET of the conversations a user is a member of. */
  userConversations(user: string): string {
    return `${this.prefix}:im:{u:${user}}:conversations`;
  }

  /** STRING: id of the leading bubble-server, with a TTL (the leader lease). */
  leader(): string {
    return `${this.prefix}:{g}:leader`;
  }

  /** ZSET node id → last heartbeat + ttl; HASH node id → NodeInfo JSON. */
  nodesAlive(): string {
    return `${this.prefix}:{g}:nodes`;
  }

  nodesInfo(): string {
    return `${this.prefix}:{g}:nodeinfo`;
  }

  /** STRING: the Assignment JSON written by the leader. */
  assignment(): string {
    return `${this.prefix}:{g}:assignment`;
  }

  /** Pub/sub channel of sweep ticks. */
  tickChannel(): string {
    return `${this.prefix}:{g}:tick`;
  }

  /** HASH node id → latest SweepReport JSON. */
  sweepReports(): string {
    return `${this.prefix}:{g}:sweeps`;
  }

  /**
   * STREAM a platform appends its events to (docs/api.md, events through a Redis Stream): one
   * per partition, each its own hash tag `{i}`, consumed by the consumer group `bubble`.
   */
  ingest(partition: number): string {
    return `${this.prefix}:ingest:{${partition}}`;
  }

  /** STREAM of the partition's dead letters: the entry's fields plus `error` and `deliveries`. */
  ingestDead(partition: number): string {
    return `${this.prefix}:ingest:dead{${partition}}`;
  }

  /**
   * Offline delivery (docs/api.md): everything a delivery worker touches in one script shares
   * the tag {w}; `part` names the structure (jobs stream, due set, batches, …).
   */
  webhook(part: string): string {
    return `${this.prefix}:webhook:{w}:${part}`;
  }

  /** STREAM of deliveries given up (written on its own, outside the {w} scripts). */
  webhookDead(): string {
    return `${this.prefix}:webhook:dead`;
  }

  /** A pattern matching every key under this prefix, for SCAN in tests and tools. */
  all(): string {
    return `${this.prefix}:*`;
  }
}
