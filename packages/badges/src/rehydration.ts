import { usersByPool, type SourcesAnswer, type SourcesFetcher } from '@bubble/protocol';
import type { BubbleStore, FeedInputs, PoolEvent } from '@bubble/store';
import type { BadgeContext } from './context.js';

/**
 * How long a fetch's in-flight mark lasts (follow changes meanwhile are recorded, not dropped):
 * past the fetch's own deadline, so a change racing a slow answer is never lost.
 */
export function inFlightMs(timeoutMs: number): number {
  return Math.max(30_000, 4 * timeoutMs);
}

/** What an install left in the store for one user. */
export interface InstalledInputs extends FeedInputs {
  /** The answer carried `noticesSeen`: the user's marks may have been set from it. */
  answeredNoticesSeen: boolean;
}

/**
 * Asks `fetcher` for the sources of `users` (none held) and installs every answer, with the
 * follow changes that raced it on top: the install of docs/semantics.md, "Where a user's
 * sources live". Returns the feed inputs of each user installed; those the platform could not
 * answer for are left out.
 */
export async function fetchAndInstall(
  store: BubbleStore,
  fetcher: SourcesFetcher,
  users: readonly string[],
  options: { caps: { follows: number; topics: number }; timeoutMs: number; deadline?: number },
): Promise<Map<string, InstalledInputs>> {
  const installed = new Map<string, InstalledInputs>();
  if (users.length === 0) return installed;
  // Before the request: a change from now on is recorded and applied on top of the answer.
  await store.sources.beginFetch(users, inFlightMs(options.timeoutMs));
  const { deadline } = options;
  const outcomes = await fetcher.fetch(users, deadline === undefined ? {} : { deadline });
  const entries: { user: string; answer: SourcesAnswer }[] = [];
  for (const [user, outcome] of outcomes) {
    if (!outcome.ok) continue;
    const { answer } = outcome;
    // A user never follows themselves (UB_ERR_SELF_FOLLOW on every other path).
    const follows = answer.follows.includes(user)
      ? answer.follows.filter((author) => author !== user)
      : answer.follows;
    entries.push({ user, answer: { ...answer, follows } });
  }
  if (entries.length === 0) return installed;
  const inputs = await store.sources.install(entries, options.caps);
  entries.forEach(({ user, answer }, i) =>
    installed.set(user, { ...inputs[i]!, answeredNoticesSeen: answer.noticesSeen !== undefined }),
  );
  return installed;
}

/** One user's feed inputs for a badge: `stale` when their sources could not be had. */
export interface RehydratedInputs {
  inputs: FeedInputs;
  /** The platform could not answer for them: the feed counts 0 until it does (semantics.md). */
  stale: boolean;
}

/**
 * Brings back the sources of users the store does not hold (docs/semantics.md, "Where a
 * user's sources live"): asks the platform's endpoint, installs the answer (with the follow
 * changes that raced it on top) and tells the pools, so a core holding such a user reloads
 * them. Only on-demand stores have users not held; without an endpoint nothing is fetched.
 */
export class Rehydration {
  constructor(
    private readonly ctx: BadgeContext,
    private readonly fetcher: SourcesFetcher | undefined,
    private readonly timeoutMs: number,
  ) {}

  /** Whether a user's sources may be missing from the store (an endpoint is configured). */
  get onDemand(): boolean {
    return this.ctx.store.sources.onDemand;
  }

  /**
   * `read` of every user, with those not held fetched and installed first: in input order.
   * A cold start waits about one timeout at most; a user whose fetch failed is `stale`.
   */
  async complete(
    users: readonly string[],
    read: readonly FeedInputs[],
  ): Promise<RehydratedInputs[]> {
    const missing = users.filter((_, i) => !read[i]!.held);
    if (missing.length === 0) return read.map((inputs) => ({ inputs, stale: false }));
    const fetched = await this.fetchAndInstall(missing, Date.now() + this.timeoutMs);
    return read.map((inputs, i) => {
      if (inputs.held) return { inputs, stale: false };
      const installed = fetched.get(users[i]!);
      return installed ? { inputs: installed, stale: false } : { inputs, stale: true };
    });
  }

  /** One user's feed inputs, fetched first if not held. */
  async feedInputs(user: string): Promise<RehydratedInputs> {
    const read = await this.ctx.store.feedInputs(user);
    return (await this.complete([user], [read]))[0]!;
  }

  /**
   * Fetches `users` (none held) and installs what the platform answered; the users it could not
   * answer for are left out. The pools of those installed are told (a `follows` event each).
   */
  async fetchAndInstall(
    users: readonly string[],
    deadline?: number,
  ): Promise<Map<string, FeedInputs>> {
    const { store, rules } = this.ctx;
    if (!this.fetcher) return new Map();
    const installed = await fetchAndInstall(store, this.fetcher, users, {
      caps: { follows: rules.followCap, topics: rules.topicCap },
      timeoutMs: this.timeoutMs,
      ...(deadline === undefined ? {} : { deadline }),
    });
    // A core holding one of them reloads their follows, cursor and marks (`noticesSeen`).
    await Promise.all(
      [...usersByPool(installed.keys(), store.pools)].map(([pool, list]) =>
        store.changes.appendPoolEvents(
          pool,
          list.flatMap((user) => installedEvents(user, installed.get(user)!)),
        ),
      ),
    );
    return installed;
  }
}

function installedEvents(user: string, inputs: FeedInputs): PoolEvent[] {
  const events: PoolEvent[] = [
    { kind: 'follows', user },
    { kind: 'marks', user },
  ];
  if (inputs.readAt !== null) events.push({ kind: 'cursor', user, readAt: inputs.readAt });
  return events;
}
