import type { CounterScope } from '@bubble/badges';
import type { BubbleStore } from '@bubble/store';
import type { ExtrasTracker } from './extras-tracker.js';
import type { FeedCounter } from './feed-counter.js';
import type { Installed, SourcesRefill } from './sources-refill.js';
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
  /** Users loaded whole per batch of reads (a pool hand-over of 100k users is many batches). */
  sliceUsers?: number;
}

/** What one sweep brings into memory (UserLoader.load). */
export interface LoadRequest {
  /** Users loaded whole: follows, topics, cursor, marks, conversations, counters, stored badge. */
  users?: readonly string[];
  /** Users whose follows and topics are read again. */
  refollow?: readonly string[];
  /** Users whose marks, conversations and counters are read again. */
  remark?: readonly string[];
  /** Users whose counters alone are read again. */
  recount?: readonly string[];
  /**
   * Users whose sources the refill installed, with what the install left in the store: taken
   * as they are, no read (a user also in `users` or `refollow` is read instead, a fresher view).
   */
  installed?: readonly Installed[];
}

const SLICE_USERS = 2000;

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
   * Brings in what `request` names. Users loaded whole go in slices of `sliceUsers`, each its
   * own batch of reads: a hand-over of 100k users at once queued a million commands, past the
   * store's command timeout, and held the event loop for seconds at a stretch.
   */
  async load(request: LoadRequest): Promise<void> {
    const { users = [], refollow = [], remark = [], recount = [] } = request;
    const read = new Set([...users, ...refollow]);
    const installed = (request.installed ?? []).filter(({ user }) => !read.has(user));
    const marksOf = [
      ...remark,
      ...installed.filter(({ inputs }) => inputs.answeredNoticesSeen).map(({ user }) => user),
    ];
    const marked = new Set([...users, ...marksOf]);
    const countersOf = recount.filter((user) => !marked.has(user));
    const work = users.length + refollow.length + installed.length + marksOf.length;
    if (work + countersOf.length === 0) return;
    const changedMeanwhile = (this.changedWhileLoading = new Set());
    const slice = this.options.sliceUsers ?? SLICE_USERS;
    try {
      for (let first = 0; first < users.length; first += slice) {
        await this.loadNow(users.slice(first, first + slice), [], [], [], [], changedMeanwhile);
      }
      await this.loadNow([], refollow, installed, marksOf, countersOf, changedMeanwhile);
    } finally {
      this.changedWhileLoading = null;
    }
  }

  private async loadNow(
    users: readonly string[],
    refollow: readonly string[],
    installed: readonly Installed[],
    remark: readonly string[],
    countersOf: readonly string[],
    changedMeanwhile: ReadonlySet<string>,
  ): Promise<void> {
    const work = users.length + refollow.length + installed.length + remark.length;
    if (work + countersOf.length === 0) return;
    const marksOf = [...users, ...remark];
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
    for (const { user, inputs } of installed) {
      refill.settled(user);
      for (const author of counter.setFollows(user, inputs.follows)) authors.add(author);
      for (const topic of counter.setTopics(user, inputs.topics)) topics.add(topic);
      // Where bubble held no cursor, the install set the platform's; one set since stays.
      if (inputs.readAt !== null) counter.raiseReadAt(user, inputs.readAt);
    }
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
    for (const { user } of installed) counter.recompute(user);
    users.forEach((user, i) => {
      // Dropped while loading (the watchdog gives pools up on a timer, sweeps or not).
      const id = counter.users.idOf(user);
      if (id !== undefined) beliefs.loaded(id, user, stored[i] ?? null, changedMeanwhile.has(user));
    });
  }
}
