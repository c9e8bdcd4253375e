/**
 * Model-based property test of the feed bubble: random command sequences run against
 * BadgeService (on each engine, with a ManualClock) and against a brute-force model written
 * straight from docs/semantics.md, "Feed bubble":
 *
 *   feed(u, T) = #{ p : author(p) ∈ Follows(u) or topics(p) ∩ Topics(u) ≠ ∅,
 *                       max(readAt(u), T − L) < ts(p) ≤ T, p not deleted }
 *
 * After every command each user's badge must equal the model, versions must never decrease,
 * and a user's version must change exactly when their feed value changed.
 *
 * Documented decisions the model follows:
 * - an ingested post with ts ≤ now − L is ignored and not stored (claims no id);
 * - the first accepted ts of an (author, id) wins;
 * - a deleted post stays deleted: the model keeps deletions forever, the store keeps a
 *   tombstone as long as the post could still be in the window;
 * - a batch holding any ts > now + 60 s is refused whole with UB_ERR_FUTURE_TS;
 * - follow cap (3 here) and self-follow are refused with UB_ERR_FOLLOW_CAP / UB_ERR_SELF_FOLLOW;
 * - topic cap (2 here) is refused with UB_ERR_FOLLOW_CAP; a post's topics are those of its first
 *   accepted ingest, and it counts once however many routes reach the user.
 *
 * Out of scope (the command is skipped through `check`): re-ingesting an (author, id) with a ts
 * inside the window after the store was allowed to forget it, i.e. once its first ts (or, for a
 * deleted post, its tombstone) is at or before now − L. The store only remembers ids for the
 * lookback window, so "first ts wins forever" is not implementable in bounded memory; see the
 * contract test "ingest trims entries at or before minTs".
 */
import { BubbleError, DAY_MS, HOUR_MS, MINUTE_MS, type Badge } from '@bubble/protocol';
import type { BadgeService } from '@bubble/badges';
import type { BubbleStore, IngestResult } from '@bubble/store';
import { ManualClock } from '@bubble/protocol';
import fc from 'fast-check';
import { expect, it } from 'vitest';
import { describeEachEngine, manualService, type EngineName } from '../support/engines.js';
import { feedCount, LOOKBACK_MS } from '../support/feed-definition.js';

const L = LOOKBACK_MS;
const SKEW = 60_000;
const FOLLOW_CAP = 3;
const TOPIC_CAP = 2;
const TOPICS = ['t0', 't1', 't2'] as const;

/** Users and authors share one id space: every user is an author too; n4 and n5 only post. */
const USERS = ['n0', 'n1', 'n2', 'n3'] as const;
const AUTHORS = ['n0', 'n1', 'n2', 'n3', 'n4', 'n5'] as const;
const POST_IDS = ['p0', 'p1', 'p2', 'p3', 'p4', 'p5', 'p6', 'p7'] as const;

const RUNS: Record<EngineName, number> = { memory: 100, redis: 50 };
const MAX_COMMANDS = 60;

// ------------------------------------------------------------------------------------- model

type Outcome = 'ok' | 'UB_ERR_SELF_FOLLOW' | 'UB_ERR_FOLLOW_CAP' | 'UB_ERR_FUTURE_TS';

interface LastBadge {
  epoch: string;
  version: number;
  feed: number;
}

class Model {
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

// ------------------------------------------------------------------------------------- real

interface Real {
  service: BadgeService;
  clock: ManualClock;
  store: BubbleStore;
}

async function outcomeOf<T>(call: Promise<T>): Promise<{ outcome: Outcome; value?: T }> {
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
function checkBadge(model: Model, user: string, badge: Badge, context: string): void {
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

async function checkAllBadges(model: Model, real: Real, after: string): Promise<void> {
  for (const user of USERS) {
    checkBadge(model, user, await real.service.badge(user), `after ${after}`);
  }
}

// ------------------------------------------------------------------------------------- commands

type Cmd = fc.AsyncCommand<Model, Real>;

interface PostSpec {
  author: string;
  id: string;
  /** ts = now + offset at the time the command runs. */
  offset: number;
  topics: string[];
}

const ms = (offset: number): string => {
  for (const [unit, size] of [
    ['d', DAY_MS],
    ['h', HOUR_MS],
    ['m', MINUTE_MS],
    ['s', 1000],
  ] as const) {
    if (offset !== 0 && offset % size === 0) return `${offset / size}${unit}`;
  }
  return `${offset}ms`;
};
const signed = (offset: number): string => (offset >= 0 ? `+${ms(offset)}` : `-${ms(-offset)}`);

class FollowCmd implements Cmd {
  constructor(
    readonly user: string,
    readonly author: string,
  ) {}
  check = (): boolean => true;
  async run(model: Model, real: Real): Promise<void> {
    const expected = model.follow(this.user, this.author);
    const { outcome } = await outcomeOf(real.service.follow(this.user, this.author));
    expect(outcome, this.toString()).toBe(expected);
    await checkAllBadges(model, real, this.toString());
  }
  toString = (): string => `follow(${this.user}, ${this.author})`;
}

class FollowTopicCmd implements Cmd {
  constructor(
    readonly user: string,
    readonly topic: string,
    readonly unfollow: boolean,
  ) {}
  check = (): boolean => true;
  async run(model: Model, real: Real): Promise<void> {
    if (this.unfollow) {
      model.topics.get(this.user)?.delete(this.topic);
      await real.service.unfollowTopic(this.user, this.topic);
    } else {
      const expected = model.followTopic(this.user, this.topic);
      const { outcome } = await outcomeOf(real.service.followTopic(this.user, this.topic));
      expect(outcome, this.toString()).toBe(expected);
    }
    await checkAllBadges(model, real, this.toString());
  }
  toString = (): string =>
    `${this.unfollow ? 'unfollowTopic' : 'followTopic'}(${this.user}, ${this.topic})`;
}

class ReplaceTopicsCmd implements Cmd {
  constructor(
    readonly user: string,
    readonly topics: readonly string[],
  ) {}
  check = (): boolean => true;
  async run(model: Model, real: Real): Promise<void> {
    const expected = model.replaceTopics(this.user, this.topics);
    const { outcome } = await outcomeOf(real.service.replaceTopics(this.user, this.topics));
    expect(outcome, this.toString()).toBe(expected);
    await checkAllBadges(model, real, this.toString());
  }
  toString = (): string => `replaceTopics(${this.user}, [${this.topics.join(',')}])`;
}

class UnfollowCmd implements Cmd {
  constructor(
    readonly user: string,
    readonly author: string,
  ) {}
  check = (): boolean => true;
  async run(model: Model, real: Real): Promise<void> {
    model.unfollow(this.user, this.author);
    await real.service.unfollow(this.user, this.author);
    await checkAllBadges(model, real, this.toString());
  }
  toString = (): string => `unfollow(${this.user}, ${this.author})`;
}

class ReplaceFollowsCmd implements Cmd {
  constructor(
    readonly user: string,
    readonly authors: readonly string[],
  ) {}
  check = (): boolean => true;
  async run(model: Model, real: Real): Promise<void> {
    const expected = model.replace(this.user, this.authors);
    const { outcome } = await outcomeOf(real.service.replaceFollows(this.user, this.authors));
    expect(outcome, this.toString()).toBe(expected);
    await checkAllBadges(model, real, this.toString());
  }
  toString = (): string => `replaceFollows(${this.user}, [${this.authors.join(',')}])`;
}

class IngestCmd implements Cmd {
  constructor(readonly posts: readonly PostSpec[]) {}
  check = (model: Readonly<Model>): boolean => model.ingestInScope(this.posts);
  async run(model: Model, real: Real): Promise<void> {
    const now = real.clock.now();
    expect(now).toBe(model.now);
    const batch = this.posts.map((p) => ({
      author: p.author,
      id: p.id,
      ts: now + p.offset,
      topics: p.topics,
    }));
    const expected = model.ingest(this.posts);
    const actual = await outcomeOf(real.service.ingestPosts(batch));
    expect(actual.outcome, this.toString()).toBe(expected.outcome);
    if (expected.result) expect(actual.value, this.toString()).toEqual(expected.result);
    await checkAllBadges(model, real, this.toString());
  }
  toString = (): string =>
    `ingest(${this.posts
      .map((p) => `${p.author}/${p.id}@now${signed(p.offset)}[${p.topics.join(',')}]`)
      .join(' ')})`;
}

class DeleteCmd implements Cmd {
  constructor(
    readonly author: string,
    readonly id: string,
  ) {}
  check = (): boolean => true;
  async run(model: Model, real: Real): Promise<void> {
    model.remove(this.author, this.id);
    await real.service.deletePost(this.author, this.id);
    await checkAllBadges(model, real, this.toString());
  }
  toString = (): string => `deletePost(${this.author}/${this.id})`;
}

type ReadKind = { scope: 'feed'; upToOffset?: number } | { scope: 'all' };

class ReadCmd implements Cmd {
  constructor(
    readonly user: string,
    readonly kind: ReadKind,
  ) {}
  check = (): boolean => true;
  async run(model: Model, real: Real): Promise<void> {
    const now = real.clock.now();
    let badge: Badge;
    if (this.kind.scope === 'all') {
      model.read(this.user, undefined);
      badge = await real.service.read(this.user, { scope: 'all' });
    } else if (this.kind.upToOffset === undefined) {
      model.read(this.user, undefined);
      badge = await real.service.read(this.user, { scope: 'feed' });
    } else {
      const upTo = Math.max(0, now + this.kind.upToOffset);
      model.read(this.user, upTo);
      badge = await real.service.read(this.user, { scope: 'feed', upTo });
    }
    checkBadge(model, this.user, badge, `the answer of ${this.toString()}`);
    await checkAllBadges(model, real, this.toString());
  }
  toString = (): string =>
    this.kind.scope === 'all'
      ? `read(${this.user}, all)`
      : this.kind.upToOffset === undefined
        ? `read(${this.user}, feed)`
        : `read(${this.user}, feed, upTo=now${signed(this.kind.upToOffset)})`;
}

class AdvanceCmd implements Cmd {
  constructor(readonly step: number) {}
  check = (): boolean => true;
  async run(model: Model, real: Real): Promise<void> {
    model.now += this.step;
    real.clock.advance(this.step);
    await checkAllBadges(model, real, this.toString());
  }
  toString = (): string => `advance(${ms(this.step)})`;
}

/** A closer look at one user: stored follows and cursor equal the model, badge twice is stable. */
class CheckCmd implements Cmd {
  constructor(readonly user: string) {}
  check = (): boolean => true;
  async run(model: Model, real: Real): Promise<void> {
    const where = `${this.toString()}\n${model.describe()}`;
    expect(await real.service.listFollows(this.user), where).toEqual(
      [...model.followsOf(this.user)].sort(),
    );
    expect(await real.store.cursors.feedReadAt(this.user), where).toBe(
      model.readAt.get(this.user) ?? null,
    );
    const first = await real.service.badge(this.user);
    checkBadge(model, this.user, first, this.toString());
    const again = await real.service.badge(this.user);
    expect(again.version, where).toBe(first.version);
    checkBadge(model, this.user, again, this.toString());
  }
  toString = (): string => `check(${this.user})`;
}

// ------------------------------------------------------------------------------------- arbitraries

const user = fc.constantFrom(...USERS);
const author = fc.constantFrom(...AUTHORS);
const postId = fc.constantFrom(...POST_IDS);

/** On a 1 s lattice (so reads and posts meet exactly) plus the boundaries of the rules. */
const postOffset = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: -20, max: 3 }).map((k) => k * 1000) },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      0,
      1,
      -1,
      30_000,
      SKEW,
      SKEW - 1,
      -HOUR_MS,
      -DAY_MS,
      -3 * DAY_MS,
      -6 * DAY_MS,
      -L + 1,
      -L + 1000,
      -L,
    ),
  },
  { weight: 1, arbitrary: fc.constantFrom(SKEW + 1, SKEW + 1000, HOUR_MS, -L - 1, -8 * DAY_MS) },
);

const topic = fc.constantFrom(...TOPICS);
const postSpec = fc.record({
  author,
  id: postId,
  offset: postOffset,
  topics: fc.uniqueArray(topic, { maxLength: 2 }),
});

const readKind: fc.Arbitrary<ReadKind> = fc.oneof(
  fc.constant<ReadKind>({ scope: 'all' }),
  fc.constant<ReadKind>({ scope: 'feed' }),
  fc
    .oneof(
      fc.integer({ min: -20, max: 5 }).map((k) => k * 1000),
      fc.constantFrom(1, -1, SKEW, HOUR_MS, -HOUR_MS, -DAY_MS, -L, -8 * DAY_MS),
    )
    .map((upToOffset): ReadKind => ({ scope: 'feed', upToOffset })),
);

const advance = fc.oneof(
  { weight: 4, arbitrary: fc.integer({ min: 0, max: 30 }).map((k) => k * 1000) },
  { weight: 1, arbitrary: fc.constantFrom(1, 999, MINUTE_MS) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(HOUR_MS, DAY_MS, 3 * DAY_MS, L - 1000, L, L + 1, 8 * DAY_MS),
  },
);

const follow = fc.tuple(user, author).map(([u, a]) => new FollowCmd(u, a));
const ingest = fc.array(postSpec, { minLength: 1, maxLength: 4 }).map((p) => new IngestCmd(p));
const read = fc.tuple(user, readKind).map(([u, kind]) => new ReadCmd(u, kind));

/** fc.commands picks uniformly among its arbitraries; repeats are the weights. */
const commands = fc.commands<Model, Real, false>(
  [
    follow,
    follow,
    follow,
    fc.tuple(user, author).map(([u, a]) => new UnfollowCmd(u, a)),
    fc
      .tuple(user, fc.array(author, { maxLength: 6 }))
      .map(([u, list]) => new ReplaceFollowsCmd(u, list)),
    ingest,
    ingest,
    ingest,
    ingest,
    fc.tuple(author, postId).map(([a, id]) => new DeleteCmd(a, id)),
    fc.tuple(user, topic, fc.boolean()).map(([u, t, un]) => new FollowTopicCmd(u, t, un)),
    fc
      .tuple(user, fc.array(topic, { maxLength: 3 }))
      .map(([u, list]) => new ReplaceTopicsCmd(u, list)),
    read,
    read,
    advance.map((step) => new AdvanceCmd(step)),
    advance.map((step) => new AdvanceCmd(step)),
    user.map((u) => new CheckCmd(u)),
  ],
  { maxCommands: MAX_COMMANDS, size: 'max' },
);

// ------------------------------------------------------------------------------------- the test

describeEachEngine('feed bubble model', (ctx, engine) => {
  it('matches the definition after every command', async () => {
    const { freshStore } = ctx();
    await fc.assert(
      fc.asyncProperty(commands, async (cmds) => {
        const store = freshStore();
        try {
          const { service, clock } = manualService(store, {
            rules: { followCap: FOLLOW_CAP, topicCap: TOPIC_CAP },
          });
          const model = new Model(clock.now());
          await fc.asyncModelRun(() => ({ model, real: { service, clock, store } }), cmds);
        } finally {
          await store.close();
        }
      }),
      { numRuns: RUNS[engine], verbose: 1 },
    );
  }, 120_000);
});
