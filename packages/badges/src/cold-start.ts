import {
  assertId,
  decodeFields,
  encodeFields,
  feedWindowStart,
  makeBadge,
  type Badge,
  type ExtraCounts,
} from '@bubble/protocol';
import type { BadgeContext } from './context.js';
import type { FeedInputs } from '@bubble/store';
import type { Rehydration } from './rehydration.js';
import type { Sightings } from './sightings.js';
import { readStoredExtras, readStoredExtrasOfMany } from './stored-extras.js';

/** Whether a call counts as the user being seen (docs/semantics.md: end-user calls only). */
export interface BadgeCallOptions {
  seen?: boolean;
}

/** A computed badge, and whether its feed is missing (the platform could not give the sources). */
export interface ServedBadge {
  badge: Badge;
  /** Served without the feed (`feed` 0): `X-Bubble-Stale: 1` on HTTP (docs/api.md). */
  stale: boolean;
}

/** A badge state as stored or published: what a core wrote, what a gateway is pushed. */
export interface BadgeStateOf {
  user: string;
  epoch: string;
  version: number;
  fields: Readonly<Record<string, number>>;
  computedAt: number;
}

/**
 * The on-demand ("cold start") computation of a user's badge from the stored sources, in one
 * batch per store, and its save, so its version moves only when a count changes.
 */
export class ColdStart {
  constructor(
    private readonly ctx: BadgeContext,
    private readonly sightings: Sightings,
    private readonly rehydration: Rehydration,
  ) {}

  /**
   * feed(u, T) of docs/semantics.md, from the stored sources (fetched from the platform first
   * when not held; 0 when it cannot answer).
   */
  async computeFeed(user: string, now: number): Promise<number> {
    const { inputs, stale } = await this.rehydration.feedInputs(user);
    return stale ? 0 : this.countFeed(inputs, now);
  }

  private countFeed({ follows, topics, readAt }: FeedInputs, now: number): Promise<number> {
    const { store, lookbackMs } = this.ctx;
    const after = feedWindowStart(readAt, now, lookbackMs);
    return store.posts.countBetween(follows, after, now, topics);
  }

  /** Notices, conversations, red dots and counters of docs/semantics.md, from the stored sources. */
  async computeExtras(user: string): Promise<ExtraCounts> {
    return (await readStoredExtras(this.ctx.store, user, this.ctx.counters)).extras;
  }

  /**
   * The user's badge as of now, computed from the stored sources and stored, so its version
   * moves only when a count changes. `seen` marks an end-user call (the notice cursor starts).
   */
  async badge(user: string, options: BadgeCallOptions = {}): Promise<Badge> {
    return (await this.serve(user, options)).badge;
  }

  /**
   * badge(), and whether it is stale. A user whose sources are not held has them fetched
   * before they are seen: the platform's `noticesSeen` then starts the notice cursor, not
   * the first sight.
   */
  async serve(user: string, options: BadgeCallOptions = {}): Promise<ServedBadge> {
    assertId(user, 'user');
    const { store } = this.ctx;
    // On demand, the sources come first: a user not held is fetched before being seen.
    const read = this.rehydration.onDemand ? await this.rehydration.feedInputs(user) : undefined;
    if (options.seen) await this.sightings.see(user);
    const now = this.ctx.clock.now();
    const stale = read?.stale ?? false;
    const [feed, stored] = await Promise.all([
      stale
        ? 0
        : (read ? Promise.resolve(read.inputs) : store.feedInputs(user)).then((inputs) =>
            this.countFeed(inputs, now),
          ),
      readStoredExtras(store, user, this.ctx.counters),
    ]);
    const fields = encodeFields(feed, stored.extras);
    // The counters' watermark: an `upTo` of this badge clears what it showed of them and
    // nothing it missed (docs/semantics.md); after `now` only by a burst's stamps.
    const computedAt = stored.countersAsOf ?? now;
    const stamp = await store.badges.save(user, fields, computedAt);
    const badge = makeBadge(
      user,
      decodeFields(fields),
      stamp,
      computedAt,
      this.ctx.rules.displayCap,
    );
    return { badge, stale };
  }

  /**
   * badge(user) of every user, in input order, as one batch (offline delivery's senders): the
   * same badges and saves, in a few round trips for the whole batch instead of several per user.
   * Never counts as the users being seen.
   */
  async badges(users: readonly string[]): Promise<Badge[]> {
    for (const user of users) assertId(user, 'user');
    if (users.length === 0) return [];
    const { store, rules } = this.ctx;
    const now = this.ctx.clock.now();
    // A user's follows, cursor, marks, conversation index and counters in one call each.
    const inputs = await store.userInputs(users, this.ctx.counters);
    const feedInputs = await this.rehydration.complete(
      users,
      inputs.map(({ feed }) => feed),
    );
    const [feeds, extras] = await Promise.all([
      Promise.all(
        feedInputs.map(({ inputs: feed, stale }) =>
          stale ? Promise.resolve(0) : this.countFeed(feed, now),
        ),
      ),
      readStoredExtrasOfMany(store, users, inputs),
    ]);
    const writes = users.map((user, i) => ({
      user,
      fields: encodeFields(feeds[i]!, extras[i]!),
      computedAt: extras[i]!.countersAsOf ?? now,
    }));
    // One save call per pool, not per user: the same saves, each decided by the store.
    const stamps = await store.badges.saveMany(writes);
    return writes.map(({ user, fields, computedAt }, i) =>
      makeBadge(user, decodeFields(fields), stamps[i]!, computedAt, rules.displayCap),
    );
  }

  /** The badge a stored or published state stands for (a core's write, a push). */
  badgeOf(state: BadgeStateOf): Badge {
    const counts = decodeFields(state.fields);
    return makeBadge(state.user, counts, state, state.computedAt, this.ctx.rules.displayCap);
  }
}
