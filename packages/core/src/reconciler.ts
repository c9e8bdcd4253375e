import { addExtraFields, encodeCounts, feedWindowStart, idRecord } from '@bubble/protocol';
import { readStoredExtras, type CounterScope } from '@bubble/badges';
import type { BubbleStore } from '@bubble/store';
import type { Logger } from 'pino';
import type { CoreMetrics } from './core-metrics.js';
import type { ExtrasTracker } from './extras-tracker.js';
import type { FeedCounter } from './feed-counter.js';
import type { SourcesRefill } from './sources-refill.js';

export interface ReconcilerOptions {
  store: BubbleStore;
  counter: FeedCounter;
  extras: ExtrasTracker;
  log: Logger;
  metrics?: CoreMetrics;
  totals: { driftRepaired: number };
  lookbackMs: number;
  counterScope: CounterScope;
  /** Users recomputed from the stored sources per sweep (a quarter of it while behind). */
  perSweep: number;
  /** Reloads the shared sources (notices, red dots) whole. */
  loadShared: () => Promise<void>;
  /** Where a user whose sources the store no longer holds goes to be fetched. */
  refill: SourcesRefill;
}

/** Reconciliation compares posts stamped at least this long ago (see reconcile). */
const SETTLED_MS = 1000;

/**
 * Finds and repairs drift: recomputes a few held users per sweep from the stored sources, in a
 * round robin over every held user, and checks again those that disagreed. A full pass over N
 * held users takes N / perSweep sweeps (docs/operations.md, BUBBLE_RECONCILE_RATE).
 */
export class Reconciler {
  private queue: string[] = [];
  /**
   * Users whose badge disagreed with the stored sources, checked again next sweep: what the
   * sources said then (a signature) and how many checks in a row disagreed while they moved.
   */
  private readonly suspects = new Map<string, { truth: string; strikes: number }>();

  constructor(private readonly options: ReconcilerOptions) {}

  /**
   * Where a count disagrees, the user's inputs and the windows of the authors that disagree are
   * reloaded; every badge that changes through this is drift repaired. While the core is behind
   * on the logs (`behind`), a quarter of the batch is checked: most disagreements are then
   * changes not read yet, which a check waits out (see below), but drift is still found.
   */
  async reconcile(now: number, behind = false): Promise<void> {
    const {
      store,
      counter,
      extras: held,
      log,
      metrics,
      totals,
      lookbackMs,
      perSweep,
    } = this.options;
    if (perSweep <= 0 || counter.userCount === 0) return;
    if (this.queue.length === 0) this.queue = counter.heldUsers();
    const suspects = [...this.suspects.keys()];
    const budget = behind ? Math.max(1, Math.floor(perSweep / 4)) : perSweep;
    // Once each: a suspect also next in the round robin (always, when fewer users are held
    // than a batch takes) was checked twice in one sweep, and the second check "confirmed" the
    // signature the first had just recorded, with nothing read from the logs between them.
    // A user whose sources the refill is bringing back is not compared: the store may hold
    // them already while the core counts none until the sweep takes the install.
    const { refill } = this.options;
    const batch = [...new Set([...suspects, ...this.queue.splice(0, budget)])].filter(
      (u) => counter.hasUser(u) && !refill.pending(u),
    );
    const marked = await store.reddots.all();
    // The stored sources of the whole batch at once: one round trip per step, not per user.
    const checks = await Promise.all(
      batch.map(async (user) => {
        const [{ follows, topics, readAt, held: sourcesHeld }, extras] = await Promise.all([
          store.feedInputs(user),
          this.storedExtras(user, marked),
        ]);
        // Sources the store lost or dropped are fetched again, not compared with.
        if (!sourcesHeld) {
          this.options.refill.need(user);
          return null;
        }
        // Posts are compared up to a second ago: a post stamped just before `now` may be stored
        // and not yet in the change log we read; it is not drift.
        const after = feedWindowStart(readAt, now, lookbackMs);
        const truth = await store.posts.countBetween(follows, after, now - SETTLED_MS, topics);
        return { user, follows, topics, readAt, extras, truth, after };
      }),
    );
    for (const check of checks) {
      if (!check) continue;
      const { user, follows, topics, readAt, extras, truth, after } = check;
      // The windows against the stored posts, and the incremental count against the windows.
      const feedAgrees =
        truth === counter.windowCount(user, after, now - SETTLED_MS) &&
        counter.countOf(user) === counter.windowCount(user, after, now) &&
        sameFollows(follows, counter.followsOf(user)) &&
        sameFollows(topics, counter.topicsOf(user)) &&
        (readAt ?? null) === counter.readAtOf(user);
      const extrasAgree = extras.key === held.heldKey(user);
      if (feedAgrees && extrasAgree) {
        this.suspects.delete(user);
        continue;
      }
      // A change may be stored but not yet read from the log: look again after the next sweep.
      // Drift is a disagreement that outlives a sweep while the sources stand still. Sources
      // that keep moving are a race: after a few checks the user goes back to the round robin.
      // The cursor and the follows are sources too: the post count alone stands still (at 0)
      // while a user who reads every second keeps moving the cursor ahead of its log event,
      // which `bubble simulate` turned into repairs of counts that were about to be right.
      const signature = `${truth}#${readAt ?? ''}#${followsKey(follows)}#${followsKey(topics)}#${extras.key}`;
      const suspect = this.suspects.get(user);
      if (suspect?.truth !== signature) {
        const strikes = (suspect?.strikes ?? 0) + 1;
        if (strikes > 3) this.suspects.delete(user);
        else this.suspects.set(user, { truth: signature, strikes });
        continue;
      }
      this.suspects.delete(user);
      const before = counter.countOf(user);
      const extrasBefore = held.heldKey(user);
      let repairedPosts = 0;
      if (!feedAgrees) {
        counter.setUser(user, follows, readAt);
        counter.setTopics(user, topics);
        const [windows, topicWindows] = await Promise.all([
          store.posts.window(follows, now - lookbackMs),
          store.posts.topicWindow(topics, now - lookbackMs),
        ]);
        for (const [author, posts] of windows) {
          if (!counter.isAuthorLoaded(author)) counter.loadAuthor(author, posts);
          else repairedPosts += counter.reloadAuthor(author, posts);
        }
        for (const [topic, posts] of topicWindows) {
          if (!counter.isTopicLoaded(topic)) counter.loadTopic(topic, posts);
          else repairedPosts += counter.reloadTopic(topic, posts);
        }
        counter.recompute(user);
      }
      if (!extrasAgree) {
        await this.options.loadShared();
        held.setUser(
          user,
          extras.marks,
          extras.memberships,
          extras.extras.counters,
          extras.countersAsOf,
        );
      }
      const repaired = counter.countOf(user);
      const extrasAfter = held.heldKey(user);
      if (repaired === before && extrasAfter === extrasBefore) {
        // The stored sources moved on between our sweep and this read: not drift.
        log.debug({ user, count: before, truth }, 'reconciliation raced a change');
        continue;
      }
      totals.driftRepaired++;
      metrics?.driftRepaired.inc();
      log.warn(
        {
          user,
          before,
          after: repaired,
          truth,
          repairedPosts,
          extrasBefore,
          extrasAfter,
        },
        'reconciliation repaired a drifted badge',
      );
    }
  }

  /** A user's stored extras, with their badge fields as stored (encodeCounts) to compare. */
  private async storedExtras(user: string, marked: Record<string, number>) {
    const { store, counterScope } = this.options;
    const stored = await readStoredExtras(store, user, counterScope, marked);
    const fields = idRecord<number>();
    addExtraFields(fields, stored.extras);
    return { ...stored, key: encodeCounts(fields) };
  }
}

/** The follow set as a short order-free key: its size and a sum of its ids' hashes. */
function followsKey(follows: readonly string[]): string {
  let sum = 0;
  for (const author of follows) {
    let hash = 0;
    for (let i = 0; i < author.length; i++) hash = (Math.imul(hash, 31) + author.charCodeAt(i)) | 0;
    sum = (sum + hash) | 0;
  }
  return `${follows.length}:${sum}`;
}

function sameFollows(stored: readonly string[], held: readonly string[]): boolean {
  if (stored.length !== held.length) return false;
  const set = new Set(held);
  return stored.every((author) => set.has(author));
}
