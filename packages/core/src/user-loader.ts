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
  /** Whether the user is still online in a pool held (a load spans awaits; pools go meanwhile). */
  holdsUser: (user: string) => boolean;
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
    const whole = new Set(users);
    const marksOf = [
      ...remark.filter((user) => !whole.has(user)),
      ...installed.filter(({ inputs }) => inputs.answeredNoticesSeen).map(({ user }) => user),
    ];
    const marked = new Set([...whole, ...marksOf]);
    const countersOf = recount.filter((user) => !marked.has(user));
    const work = users.length + refollow.length + installed.length + marksOf.length;
    if (work + countersOf.length === 0) return;
    const changedMeanwhile = (this.changedWhileLoading = new Set());
    const slice = this.options.sliceUsers ?? SLICE_USERS;
    try {
      for (let first = 0; first < users.length; first += slice) {
        // A slice's users whose pool went meanwhile are not read at all: after Redis lost its
        // data, a sweep read 100k users for 21 s for the pools it had just lost.
        const held = users.slice(first, first + slice).filter(this.options.holdsUser);
        if (held.length > 0) await this.loadWhole(held, changedMeanwhile);
      }
      await this.loadChanges(refollow, installed, marksOf, countersOf);
    } finally {
      this.changedWhileLoading = null;
    }
  }

  /**
   * Users loaded whole: their own inputs in one call each (a chunk of users per call on one
   * Redis server), the stored badge, then the conversations' sequences and the authors' and
   * topics' windows nobody held followed yet.
   */
  private async loadWhole(
    users: readonly string[],
    changedMeanwhile: ReadonlySet<string>,
  ): Promise<void> {
    const { store, counter, extras, beliefs, counterScope, refill, holdsUser } = this.options;
    const [inputs, stored] = await Promise.all([
      store.userInputs(users, counterScope),
      Promise.all(users.map((user) => store.badges.load(user))),
    ]);
    const memberships = await store.conversations.membershipSeqs(
      users,
      inputs.map(({ conversations }) => conversations),
    );
    const authors = new Set<string>();
    const topics = new Set<string>();
    // A user whose sources are not held counts no feed until the platform's answer is
    // installed (SourcesRefill); one held already keeps the follows it had meanwhile.
    users.forEach((user, i) => {
      // Let go meanwhile (pool given up, gone offline): taking them in now would hold a user
      // no pool of ours names, counted and written for nobody.
      if (!holdsUser(user)) return;
      const { feed, marks, counters } = inputs[i]!;
      if (feed.held) refill.settled(user);
      else refill.need(user);
      for (const author of counter.setUser(user, feed.follows, feed.readAt)) authors.add(author);
      for (const topic of counter.setTopics(user, feed.topics)) topics.add(topic);
      extras.setUser(user, marks, memberships[i]!, counters.counts, counters.asOf);
    });
    await this.loadWindows(authors, topics);
    users.forEach((user, i) => {
      counter.recompute(user);
      // Dropped while loading (the watchdog gives pools up on a timer, sweeps or not).
      const id = counter.users.idOf(user);
      if (id !== undefined) beliefs.loaded(id, user, stored[i] ?? null, changedMeanwhile.has(user));
    });
  }

  /**
   * The follows of `refollow` read again, those of `installed` taken as the install left them,
   * the marks, conversations and counters of `remark`, the counters alone of `countersOf`.
   */
  private async loadChanges(
    refollow: readonly string[],
    installed: readonly Installed[],
    remark: readonly string[],
    countersOf: readonly string[],
  ): Promise<void> {
    if (refollow.length + installed.length + remark.length + countersOf.length === 0) return;
    const { store, counter, extras, counterScope, refill } = this.options;
    const { kinds, windowMs } = counterScope;
    const [follows, marks, memberships, counts, recounts] = await Promise.all([
      Promise.all(refollow.map((user) => store.feedInputs(user))),
      Promise.all(remark.map((user) => store.marks.state(user))),
      store.conversations.membershipSeqs(remark),
      Promise.all(remark.map((user) => store.counters.counts(user, kinds, windowMs))),
      Promise.all(countersOf.map((user) => store.counters.counts(user, kinds, windowMs))),
    ]);
    const authors = new Set<string>();
    const topics = new Set<string>();
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
    remark.forEach((user, i) =>
      extras.setUser(user, marks[i]!, memberships[i]!, counts[i]!.counts, counts[i]!.asOf),
    );
    countersOf.forEach((user, i) =>
      extras.setCounters(user, recounts[i]!.counts, recounts[i]!.asOf),
    );
    await this.loadWindows(authors, topics);
    for (const user of refollow) counter.recompute(user);
    for (const { user } of installed) counter.recompute(user);
  }

  /** The windows of authors and topics newly followed, from the stored posts. */
  private async loadWindows(authors: Set<string>, topics: Set<string>): Promise<void> {
    const { store, counter, lookbackMs } = this.options;
    if (authors.size + topics.size === 0) return;
    const after = counter.time - lookbackMs;
    const [windows, topicWindows] = await Promise.all([
      store.posts.window([...authors], after),
      topics.size > 0 ? store.posts.topicWindow([...topics], after) : new Map(),
    ]);
    for (const [author, posts] of windows) counter.loadAuthor(author, posts);
    for (const [topic, posts] of topicWindows) counter.loadTopic(topic, posts);
  }
}
