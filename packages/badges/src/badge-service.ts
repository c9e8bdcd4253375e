import {
  stemmedFrameText,
  type Badge,
  type Clock,
  type CursorMigrationBody,
  type ExtraCounts,
  type FrameStem,
  type ReadRequest,
  type SourcesFetcher,
} from '@bubble/protocol';
import type { BubbleStore, CounterEvent, Post } from '@bubble/store';
import {
  ColdStart,
  type BadgeCallOptions,
  type BadgeStateOf,
  type ServedBadge,
} from './cold-start.js';
import { createBadgeContext, type BadgeContext } from './context.js';
import { Conversations, type ConversationListItem, type PlatformMessage } from './conversations.js';
import { Counters } from './counters.js';
import { CursorMigration } from './cursor-migration.js';
import { Explainer, type BadgeExplanation } from './explain.js';
import { storeGatewayLink, type GatewayLink } from './gateway-link.js';
import { Ingest } from './ingest.js';
import type { OfflineJobs } from './offline-jobs.js';
import { userPool } from './pool-events.js';
import { Presence } from './presence.js';
import { Reads } from './reads.js';
import { Rehydration } from './rehydration.js';
import type { BadgeRules } from './rules.js';
import { SharedSources } from './shared-sources.js';
import { Sightings } from './sightings.js';

/** BUBBLE_SOURCES_TIMEOUT_MS' default (docs/api.md, "Sources endpoint"). */
export const DEFAULT_SOURCES_TIMEOUT_MS = 2000;

export interface BadgeServiceOptions {
  offlineJobs?: OfflineJobs | undefined;
  /** The platform's sources endpoint (BUBBLE_SOURCES_URL): where users not held come from. */
  sources?: SourcesFetcher | undefined;
  /** How long a cold start waits for the endpoint (BUBBLE_SOURCES_TIMEOUT_MS). */
  sourcesTimeoutMs?: number;
}

/**
 * The badge rules of docs/semantics: every use case of the badges layer behind one object, as
 * the gateway routes, the roles, the benches and the tests call them. Each method hands over to
 * the module of its use case; none holds logic of its own.
 */
export class BadgeService {
  readonly rules: Readonly<BadgeRules>;
  /** The gateway's way to the store (routes, presence, health); it uses nothing else of it. */
  readonly gatewayLink: GatewayLink;
  private readonly ctx: BadgeContext;
  private readonly ingest: Ingest;
  private readonly presence: Presence;
  private readonly coldStart: ColdStart;
  private readonly reads: Reads;
  private readonly explainer: Explainer;
  private readonly sightings: Sightings;
  private readonly shared: SharedSources;
  private readonly conversations: Conversations;
  private readonly counters: Counters;
  private readonly cursorMigration: CursorMigration;

  constructor(
    readonly store: BubbleStore,
    readonly clock: Clock,
    rules: Partial<BadgeRules> = {},
    options: BadgeServiceOptions = {},
  ) {
    const ctx = createBadgeContext(store, clock, rules, options.offlineJobs);
    this.ctx = ctx;
    this.rules = ctx.rules;
    this.gatewayLink = storeGatewayLink(store);
    this.sightings = new Sightings(ctx);
    const rehydration = new Rehydration(
      ctx,
      options.sources,
      options.sourcesTimeoutMs ?? DEFAULT_SOURCES_TIMEOUT_MS,
    );
    this.coldStart = new ColdStart(ctx, this.sightings, rehydration);
    this.ingest = new Ingest(ctx, rehydration);
    this.presence = new Presence(ctx, this.coldStart);
    this.counters = new Counters(ctx);
    this.reads = new Reads(ctx, this.sightings, this.coldStart, this.counters);
    this.explainer = new Explainer(ctx, rehydration);
    this.shared = new SharedSources(ctx);
    this.conversations = new Conversations(ctx);
    this.cursorMigration = new CursorMigration(ctx);
  }

  // ---- ingest (ingest.ts) and presence (presence.ts) ----

  follow(user: string, author: string): Promise<void> {
    return this.ingest.follow(user, author);
  }

  unfollow(user: string, author: string): Promise<void> {
    return this.ingest.unfollow(user, author);
  }

  replaceFollows(user: string, authors: readonly string[]): Promise<void> {
    return this.ingest.replaceFollows(user, authors);
  }

  listFollows(user: string): Promise<string[]> {
    return this.ingest.listFollows(user);
  }

  followTopic(user: string, topic: string): Promise<void> {
    return this.ingest.followTopic(user, topic);
  }

  unfollowTopic(user: string, topic: string): Promise<void> {
    return this.ingest.unfollowTopic(user, topic);
  }

  replaceTopics(user: string, topics: readonly string[]): Promise<void> {
    return this.ingest.replaceTopics(user, topics);
  }

  listTopics(user: string): Promise<string[]> {
    return this.ingest.listTopics(user);
  }

  /** All-or-nothing: one post in the future refuses the whole batch. */
  ingestPosts(posts: readonly Post[]): Promise<{ accepted: number; ignored: number }> {
    return this.ingest.ingestPosts(posts);
  }

  deletePost(author: string, id: string): Promise<void> {
    return this.ingest.deletePost(author, id);
  }

  setPresence(user: string, online: boolean, ttlMs: number): Promise<void> {
    return this.presence.setPresence(user, online, ttlMs);
  }

  // ---- cold start (cold-start.ts), reads (reads.ts), explain (explain.ts) ----

  computeFeed(user: string, now: number): Promise<number> {
    return this.coldStart.computeFeed(user, now);
  }

  computeExtras(user: string): Promise<ExtraCounts> {
    return this.coldStart.computeExtras(user);
  }

  badge(user: string, options: BadgeCallOptions = {}): Promise<Badge> {
    return this.coldStart.badge(user, options);
  }

  /** badge(), and whether it was served without the feed (the platform's sources missing). */
  serveBadge(user: string, options: BadgeCallOptions = {}): Promise<ServedBadge> {
    return this.coldStart.serve(user, options);
  }

  /** badge(user) of each user (never seen), in input order, as one batch: offline delivery. */
  badges(users: readonly string[]): Promise<Badge[]> {
    return this.coldStart.badges(users);
  }

  /** The badge a stored or published state stands for (a core's write, a push). */
  badgeOf(state: BadgeStateOf): Badge {
    return this.coldStart.badgeOf(state);
  }

  /**
   * The text of the badge frame of a published state (its counts as stored text), the same as
   * badgeOf's: a push, from the user's stem.
   */
  frameOf(stem: FrameStem, version: number, computedAt: number, counts: string): string {
    return stemmedFrameText(stem, version, computedAt, counts, this.rules.displayCap);
  }

  read(user: string, request: ReadRequest): Promise<Badge> {
    return this.reads.read(user, request);
  }

  reset(user: string): Promise<Badge> {
    return this.reads.reset(user);
  }

  explain(user: string): Promise<BadgeExplanation> {
    return this.explainer.explain(user);
  }

  /** POST /v1/cursors (cursor-migration.ts): all-or-nothing validation, then every entry applied. */
  migrateCursors(body: CursorMigrationBody): Promise<{ accepted: number }> {
    return this.cursorMigration.migrate(body);
  }

  // ---- shared sources (shared-sources.ts) and sightings (sightings.ts) ----

  publishNotice(id: number, ts?: number): Promise<void> {
    return this.shared.publishNotice(id, ts);
  }

  withdrawNotice(id: number): Promise<void> {
    return this.shared.withdrawNotice(id);
  }

  markReddot(name: string, ts?: number): Promise<void> {
    return this.shared.markReddot(name, ts);
  }

  clearReddot(name: string): Promise<void> {
    return this.shared.clearReddot(name);
  }

  dropInactiveUsers(limit: number): Promise<string[]> {
    return this.sightings.dropInactiveUsers(limit);
  }

  expireOfflineBadges(limit: number): Promise<number> {
    return this.sightings.expireOfflineBadges(limit);
  }

  // ---- conversations (conversations.ts) ----

  replaceMembers(conversation: string, members: readonly string[]): Promise<void> {
    return this.conversations.replaceMembers(conversation, members);
  }

  addMembers(conversation: string, members: readonly string[]): Promise<void> {
    return this.conversations.addMembers(conversation, members);
  }

  removeMember(conversation: string, user: string): Promise<void> {
    return this.conversations.removeMember(conversation, user);
  }

  dissolve(conversation: string): Promise<void> {
    return this.conversations.dissolve(conversation);
  }

  ingestMessages(
    conversation: string,
    messages: readonly PlatformMessage[],
  ): Promise<{ accepted: number }> {
    return this.conversations.ingestMessages(conversation, messages);
  }

  setMuted(user: string, conversation: string, muted: boolean): Promise<void> {
    return this.conversations.setMuted(user, conversation, muted);
  }

  conversationList(user: string, limit: number): Promise<ConversationListItem[]> {
    return this.conversations.conversationList(user, limit);
  }

  // ---- interaction counters (counters.ts) ----

  /** All-or-nothing: one bad id or kind refuses the whole batch. */
  ingestCounterEvents(
    events: readonly CounterEvent[],
  ): Promise<{ accepted: number; ignored: number }> {
    return this.counters.ingest(events);
  }

  retractCounterEvent(user: string, kind: string, id: string): Promise<void> {
    return this.counters.retract({ user, kind, id });
  }

  poolOf(user: string): number {
    return userPool(this.ctx, user);
  }
}
