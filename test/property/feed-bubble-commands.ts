/** The commands of the feed bubble model test: each runs on BadgeService and on the model. */
import { DAY_MS, HOUR_MS, MINUTE_MS, type Badge } from '@bubble/protocol';
import fc from 'fast-check';
import { expect } from 'vitest';
import {
  AUTHORS,
  checkAllBadges,
  checkBadge,
  L,
  MAX_COMMANDS,
  Model,
  outcomeOf,
  POST_IDS,
  SKEW,
  TOPICS,
  USERS,
  type PostSpec,
  type Real,
} from './feed-bubble-model.js';

export type Cmd = fc.AsyncCommand<Model, Real>;

export const ms = (offset: number): string => {
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
export const signed = (offset: number): string =>
  offset >= 0 ? `+${ms(offset)}` : `-${ms(-offset)}`;

export class FollowCmd implements Cmd {
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

export class FollowTopicCmd implements Cmd {
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

export class ReplaceTopicsCmd implements Cmd {
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

export class UnfollowCmd implements Cmd {
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

export class ReplaceFollowsCmd implements Cmd {
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

export class IngestCmd implements Cmd {
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

export class DeleteCmd implements Cmd {
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

export type ReadKind = { scope: 'feed'; upToOffset?: number } | { scope: 'all' };

export class ReadCmd implements Cmd {
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

export class AdvanceCmd implements Cmd {
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
export class CheckCmd implements Cmd {
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

export const user = fc.constantFrom(...USERS);
export const author = fc.constantFrom(...AUTHORS);
export const postId = fc.constantFrom(...POST_IDS);

/** On a 1 s lattice (so reads and posts meet exactly) plus the boundaries of the rules. */
export const postOffset = fc.oneof(
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

export const topic = fc.constantFrom(...TOPICS);
export const postSpec = fc.record({
  author,
  id: postId,
  offset: postOffset,
  topics: fc.uniqueArray(topic, { maxLength: 2 }),
});

export const readKind: fc.Arbitrary<ReadKind> = fc.oneof(
  fc.constant<ReadKind>({ scope: 'all' }),
  fc.constant<ReadKind>({ scope: 'feed' }),
  fc
    .oneof(
      fc.integer({ min: -20, max: 5 }).map((k) => k * 1000),
      fc.constantFrom(1, -1, SKEW, HOUR_MS, -HOUR_MS, -DAY_MS, -L, -8 * DAY_MS),
    )
    .map((upToOffset): ReadKind => ({ scope: 'feed', upToOffset })),
);

export const advance = fc.oneof(
  { weight: 4, arbitrary: fc.integer({ min: 0, max: 30 }).map((k) => k * 1000) },
  { weight: 1, arbitrary: fc.constantFrom(1, 999, MINUTE_MS) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(HOUR_MS, DAY_MS, 3 * DAY_MS, L - 1000, L, L + 1, 8 * DAY_MS),
  },
);

export const follow = fc.tuple(user, author).map(([u, a]) => new FollowCmd(u, a));
export const ingest = fc
  .array(postSpec, { minLength: 1, maxLength: 4 })
  .map((p) => new IngestCmd(p));
export const read = fc.tuple(user, readKind).map(([u, kind]) => new ReadCmd(u, kind));

/** fc.commands picks uniformly among its arbitraries; repeats are the weights. */
export const commands = fc.commands<Model, Real, false>(
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
