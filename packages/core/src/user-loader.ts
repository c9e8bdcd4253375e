import type { CounterScope } from '@bubble/badges';
import type { BubbleStore } from '@bubble/store';
import type { ExtrasTracker } from './extras-tracker.js';
import type { FeedCounter } from './feed-counter.js';
import type { SourcesRefill } from './sources-refill.js';
import type { StoredBeliefs } from './stored-beliefs.js';

export interface UserLoaderOptions {
  store: BubbleStore;
  counter: FeedCounter;
  extras: ExtrasTracker;
  beliefs: StoredBeliefs;
  lookbackMs: number;
  counterScope: CounterScope;
  /** Where users whose sources the store does not hold go to be fetched. */
  refill: SourcesRefill;
}

/**
 * Brings users into memory (or refreshes their follows, or their marks and conversations):
 * their follows, topic follows and cursor, the windows of authors and topics nobody held
 * followed yet, their marks and
 * conversations, and the badge they last had stored. One batch each.
 */
export class UserLoader {
  /**
   * While users load: those a gateway's write changed meanwhile. Their loaded badge may predate
   * that write, and its message may have come before they were held, so their counts are
   * written again rather than trusted.
   */
  private changedWhileLoading: Set<string> | null = null;

  constructor(private readonly options: UserLoaderOptions) {}

  /** A gateway wrote the user's badge state. */
  gatewayWrote(user: string): void {
    this.changedWhileLoading?.add(user);
  }

  /**
   * Loads `users` whole, the follows of `refollow`, the marks, conversations and counters of
   * `remark`, the counters alone of `recount`.
   */
  async load(
    users: string[],
    refollow: string[],
    remark: string[],
    recount: string[] = [],
  ): Promise<void> {
    if (users.length + refollow.length + remark.length + recount.length === 0) return;
    const marksOf = [...users, ...remark];
    const marked = new Set(marksOf);
    const countersOf = recount.filter((user) => !marked.has(user));
    const changedMeanwhile = (this.changedWhileLoading = new Set());
    try {
      await this.loadNow(users, refollow, marksOf, countersOf, changedMeanwhile);
    } finally {
      this.changedWhileLoading = null;
    }
  }

  private async loadNow(
    users: string[],
    refollow: string[],
    marksOf: string[],
    countersOf: string[],
    changedMeanwhile: ReadonlySet<string>,
  ): Promise<void> {
    const { store, counter, extras, beliefs, lookbackMs, counterScope, refill } = this.options;
    const { kinds, windowMs } = counterScope;
    const [inputs, stored, follows, marks, memberships, counts, recounts] = await Promise.all([
      Promise.all(users.map((user) => store.feedInputs(user))),
      Promise.all(users.map((user) => store.badges.load(user))),
      Promise.all(refollow.map((user) => store.feedInputs(user))),
      Promise.all(marksOf.map((user) => store.marks.state(user))),
      store.conversations.membershipSeqs(marksOf),
      Promise.all(marksOf.map((user) => store.counters.counts(user, kinds, windowMs))),
      Promise.all(countersOf.map((user) => store.counters.counts(user, kinds, windowMs))),
    ]);
    const authors = new Set<string>();
    const topics = new Set<string>();
    // A user whose sources are not held counts no feed until the platform's answer is
    // installed (SourcesRefill); one held already keeps the follows it had meanwhile.
    users.forEach((user, i) => {
      const { follows: f, topics: t, readAt, held } = inputs[i]!;
      if (held) refill.settled(user);
      else refill.need(user);
      for (const author of counter.setUser(user, f, readAt)) authors.add(author);
      for (const topic of counter.setTopics(user, t)) topics.add(topic);
    });
    refollow.forEach((user, i) => {
      const { follows: f, topics: t, held } = follows[i]!;
      if (!held) {
        refill.need(user);
        return;
      }
      refill.settled(user);
      for (const author of counter.setFollows(user, f)) authors.add(author);
      for (const topic of counter.setTopics(user, t)) topics.add(topic);
    });
    marksOf.forEach((user, i) =>
      extras.setUser(user, marks[i]!, memberships[i]!, counts[i]!.counts, counts[i]!.asOf),
    );
    countersOf.forEach((user, i) =>
      extras.setCounters(user, recounts[i]!.counts, recounts[i]!.asOf),
    );
    const after = counter.time - lookbackMs;
    const [windows, topicWindows] = await Promise.all([
      store.posts.window([...authors], after),
      topics.size > 0 ? store.posts.topicWindow([...topics], after) : new Map(),
    ]);
    for (const [author, posts] of windows) counter.loadAuthor(author, posts);
    for (const [topic, posts] of topicWindows) counter.loadTopic(topic, posts);
    for (const user of users) counter.recompute(user);
    for (const user of refollow) counter.recompute(user);
    users.forEach((user, i) => {
      // Dropped while loading (the watchdog gives pools up on a timer, sweeps or not).
      const id = counter.users.idOf(user);
      if (id !== undefined) beliefs.loaded(id, user, stored[i] ?? null, changedMeanwhile.has(user));
    });
  }
}
