/**
 * The brute-force model of the feed bubble (docs/semantics.md, "Feed bubble") that
 * feed-bubble.property.test.ts runs against BadgeService, and the checks of a served badge
 * against it.
 */
import { BubbleError, type Badge } from '@bubble/protocol';
import type { BadgeService } from '@bubble/badges';
import type { BubbleStore, IngestResult } from '@bubble/store';
import { ManualClock } from '@bubble/protocol';
import { expect } from 'vitest';
import type { EngineName } from '../support/engines.js';
import { feedCount, LOOKBACK_MS } from '../support/feed-definition.js';

export const L = LOOKBACK_MS;
export const SKEW = 60_000;
export const FOLLOW_CAP = 3;
export const TOPIC_CAP = 2;
export const TOPICS = ['t0', 't1', 't2'] as const;

/** Users and authors share one id space: every user is an author too; n4 and n5 only post. */
export const USERS = ['n0', 'n1', 'n2', 'n3'] as const;
export const AUTHORS = ['n0', 'n1', 'n2', 'n3', 'n4', 'n5'] as const;
export const POST_IDS = ['p0', 'p1', 'p2', 'p3', 'p4', 'p5', 'p6', 'p7'] as const;

export const RUNS: Record<EngineName, number> = { memory: 100, redis: 50 };
export const MAX_COMMANDS = 60;

// ------------------------------------------------------------------------------------- model

export type Outcome = 'ok' | 'UB_ERR_SELF_FOLLOW' | 'UB_ERR_FOLLOW_CAP' | 'UB_ERR_FUTURE_TS';

export interface LastBadge {
  epoch: string;
  version: number;
  feed: number;
}

export class Model {
  now: number;
  readonly follows = new Map<string, Set<string>>();
  /** Every post ever accepted, by `author/id`, with its first accepted ts. */
  readonly posts = new Map<string, { author: string; ts: number; topics: string[] }>();
  readonly topics = new Map<string, Set<string>>();
  /** Deleted posts (forever), with the time the store may forget the tombstone after. */
  readonly deleted = new Map<string, number>();
  readonly readAt = new Map<string, number>();
  readonly lastBadge = new Map<string, LastBadge>();

  readonly start: number;

  constructor(now: number) {
    this.now = now;
    this.start = now;
  }

  followsOf(user: string): Set<string> {
    return this.follows.get(user) ?? new Set();
  }

  feed(user: string): number {
    return feedCount(
      this.posts,
      this.deleted,
      this.followsOf(user),
      this.readAt.get(user),
      this.now,
      this.topics.get(user),
    );
  }

  followTopic(user: string, topic: string): Outcome {
    const set = this.topics.get(user) ?? new Set();
    if (set.has(topic)) return 'ok';
    if (set.size >= TOPIC_CAP) return 'UB_ERR_FOLLOW_CAP';
    this.topics.set(user, new Set([...set, topic]));
    return 'ok';
  }

  replaceTopics(user: string, topics: readonly string[]): Outcome {
    const unique = new Set(topics);
    if (unique.size > TOPIC_CAP) return 'UB_ERR_FOLLOW_CAP';
    this.topics.set(user, unique);
    return 'ok';
  }

  follow(user: string, author: string): Outcome {
    if (user === author) return 'UB_ERR_SELF_FOLLOW';
    const set = this.followsOf(user);
    if (set.has(author)) return 'ok';
    if (set.size >= FOLLOW_CAP) return 'UB_ERR_FOLLOW_CAP';
    this.follows.set(user, new Set([...set, author]));
    return 'ok';
  }

  unfollow(user: string, author: string): Outcome {
    const set = new Set(this.followsOf(user));
    set.delete(author);
    this.follows.set(user, set);
    return 'ok';
  }

  replace(user: string, authors: readonly string[]): Outcome {
    const unique = new Set(authors);
    if (unique.has(user)) return 'UB_ERR_SELF_FOLLOW';
    if (unique.size > FOLLOW_CAP) return 'UB_ERR_FOLLOW_CAP';
    this.follows.set(user, unique);
    return 'ok';
  }

  /** Whether the store's answer is defined by the spec for this batch (see the file header). */
  ingestInScope(posts: readonly PostSpec[]): boolean {
    const minTs = this.now - L;
    if (posts.some((p) => p.offset > SKEW)) return true; // refused whole
    return posts.every((p) => {
      const ts = this.now + p.offset;
      if (ts <= minTs) return true;
      const key = `${p.author}/${p.id}`;
      const tomb = this.deleted.get(key);
      if (tomb !== undefined) return tomb > minTs;
      const first = this.posts.get(key);
      return first === undefined || first.ts > minTs;
    });
  }

  ingest(posts: readonly PostSpec[]): {
    outcome: Outcome;
    result?: Pick<IngestResult, 'accepted' | 'ignored'>;
  } {
    if (posts.some((p) => p.offset > SKEW)) return { outcome: 'UB_ERR_FUTURE_TS' };
    let accepted = 0;
    let ignored = 0;
    for (const p of posts) {
      const ts = this.now + p.offset;
      const key = `${p.author}/${p.id}`;
      if (ts <= this.now - L || this.deleted.has(key)) {
        ignored++;
        continue;
      }
      accepted++;
      if (!this.posts.has(key)) this.posts.set(key, { author: p.author, ts, topics: p.topics });
    }
    return { outcome: 'ok', result: { accepted, ignored } };
  }

  remove(author: string, id: string): void {
    const key = `${author}/${id}`;
    const until = Math.max(
      this.deleted.get(key) ?? -Infinity,
      this.posts.get(key)?.ts ?? -Infinity,
      this.now,
    );
    this.deleted.set(key, until);
  }

  read(user: string, upTo: number | undefined): void {
    const to = Math.min(upTo ?? this.now, this.now);
    this.readAt.set(user, Math.max(this.readAt.get(user) ?? -Infinity, to));
  }

  describe(): string {
    const follows = [...this.follows].map(([u, s]) => `${u}→[${[...s].sort().join(',')}]`);
    const posts = [...this.posts].map(
      ([key, p]) => `${key}@${p.ts - this.start}${this.deleted.has(key) ? '(deleted)' : ''}`,
    );
    const deletedOnly = [...this.deleted.keys()].filter((k) => !this.posts.has(k));
    const reads = [...this.readAt].map(([u, t]) => `${u}@${t - this.start}`);
    return [
      `now=T0+${this.now - this.start}`,
      `follows: ${follows.join(' ')}`,
      `posts (ts as T0+ms): ${posts.join(' ')}`,
      `deleted unknown: ${deletedOnly.join(' ')}`,
      `readAt: ${reads.join(' ')}`,
    ].join('\n');
  }
}

export interface PostSpec {
  author: string;
  id: string;
  /** ts = now + offset at the time the command runs. */
  offset: number;
  topics: string[];
}

// ------------------------------------------------------------------------------------- real

export interface Real {
  service: BadgeService;
  clock: ManualClock;
  store: BubbleStore;
}

export async function outcomeOf<T>(call: Promise<T>): Promise<{ outcome: Outcome; value?: T }> {
  try {
    return { outcome: 'ok', value: await call };
  } catch (error) {
    if (
      error instanceof BubbleError &&
      (error.code === 'UB_ERR_SELF_FOLLOW' ||
        error.code === 'UB_ERR_FOLLOW_CAP' ||
        error.code === 'UB_ERR_FUTURE_TS')
    ) {
      return { outcome: error.code };
    }
    throw error;
  }
}

/** Checks one served badge against the model and the user's previous badge, then records it. */
export function checkBadge(model: Model, user: string, badge: Badge, context: string): void {
  const where = `${context}, badge of ${user}\n${model.describe()}`;
  expect(badge.user, where).toBe(user);
  expect(badge.feed, where).toBe(model.feed(user));
  expect(badge.total, where).toBe(badge.feed);
  expect(badge.display, where).toBe(badge.feed > 99 ? '99+' : String(badge.feed));
  const previous = model.lastBadge.get(user);
  if (previous === undefined) {
    expect(badge.version, where).toBe(1);
  } else {
    expect(badge.epoch, where).toBe(previous.epoch);
    expect(badge.version, where).toBeGreaterThanOrEqual(previous.version);
    expect(badge.version !== previous.version, `${where}\nversion changes iff the feed does`).toBe(
      badge.feed !== previous.feed,
    );
    if (badge.version !== previous.version) {
      expect(badge.version, where).toBe(previous.version + 1);
    }
  }
  model.lastBadge.set(user, { epoch: badge.epoch, version: badge.version, feed: badge.feed });
}

export async function checkAllBadges(model: Model, real: Real, after: string): Promise<void> {
  for (const user of USERS) {
    checkBadge(model, user, await real.service.badge(user), `after ${after}`);
  }
}
