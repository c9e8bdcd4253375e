import type { BubbleStore } from '@bubble/store';
import type { ExtrasTracker } from './extras-tracker.js';
import type { FeedCounter } from './feed-counter.js';
import type { StoredBeliefs } from './stored-beliefs.js';

export interface UserLoaderOptions {
  store: BubbleStore;
  counter: FeedCounter;
  extras: ExtrasTracker;
  beliefs: StoredBeliefs;
  lookbackMs: number;
}

/**
 * Brings users into memory (or refreshes their follows, or their marks and conversations):
 * their follows and cursor, the windows of authors nobody held followed yet, their marks and
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

  /** Loads `users` whole, the follows of `refollow`, the marks and conversations of `remark`. */
  async load(users: string[], refollow: string[], remark: string[]): Promise<void> {
    if (users.length === 0 && refollow.length === 0 && remark.length === 0) return;
    const marksOf = [...users, ...remark];
    const changedMeanwhile = (this.changedWhileLoading = new Set());
    try {
      await this.loadNow(users, refollow, marksOf, changedMeanwhile);
    } finally {
      this.changedWhileLoading = null;
    }
  }

  private async loadNow(
    users: string[],
    refollow: string[],
    marksOf: string[],
    changedMeanwhile: ReadonlySet<string>,
  ): Promise<void> {
    const { store, counter, extras, beliefs, lookbackMs } = this.options;
    const [inputs, stored, follows, marks, memberships] = await Promise.all([
      Promise.all(users.map((user) => store.feedInputs(user))),
      Promise.all(users.map((user) => store.badges.load(user))),
      Promise.all(refollow.map((user) => store.follows.list(user))),
      Promise.all(marksOf.map((user) => store.marks.state(user))),
      store.conversations.membershipSeqs(marksOf),
    ]);
    const authors = new Set<string>();
    users.forEach((user, i) => {
      const { follows: f, readAt } = inputs[i]!;
      for (const author of counter.setUser(user, f, readAt)) authors.add(author);
    });
    refollow.forEach((user, i) => {
      for (const author of counter.setFollows(user, follows[i]!)) authors.add(author);
    });
    marksOf.forEach((user, i) => extras.setUser(user, marks[i]!, memberships[i]!));
    const windows = await store.posts.window([...authors], counter.time - lookbackMs);
    for (const [author, posts] of windows) counter.loadAuthor(author, posts);
    for (const user of users) counter.recompute(user);
    for (const user of refollow) counter.recompute(user);
    users.forEach((user, i) => {
      // Dropped while loading (the watchdog gives pools up on a timer, sweeps or not).
      const id = counter.users.idOf(user);
      if (id !== undefined) beliefs.loaded(id, user, stored[i] ?? null, changedMeanwhile.has(user));
    });
  }
}
