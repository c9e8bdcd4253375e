import type { ExtraCounts } from '@bubble/protocol';
import type { BubbleStore, MembershipSeqs, UserInputs, UserMarksState } from '@bubble/store';
import { shownReddots, unreadOf } from './source-counts.js';

/** Which interaction counters a badge counts: BUBBLE_COUNTER_KINDS, over BUBBLE_INACTIVE_DAYS. */
export interface CounterScope {
  kinds: readonly string[];
  windowMs: number;
}

export interface StoredExtras {
  extras: ExtraCounts;
  marks: UserMarksState;
  memberships: MembershipSeqs[];
  /** The counters' watermark (CounterCounts.asOf): later events are stamped after it. */
  countersAsOf: number | null;
}

/**
 * A user's notices, conversations (maxSeq − readSeq), red dots and interaction counters from
 * the stored sources: the cold start's answer, and what reconciliation compares a core's held
 * extras with. `marked` (every marked red dot) may be passed in when many users are read at once.
 */
export async function readStoredExtras(
  store: BubbleStore,
  user: string,
  counters: CounterScope,
  marked?: Readonly<Record<string, number>>,
): Promise<StoredExtras> {
  const [marks, memberships, dots, counted] = await Promise.all([
    store.marks.state(user),
    // Counts only: no preview is part of a badge.
    store.conversations.membershipSeqs([user]).then(([seqs]) => seqs!),
    marked ?? store.reddots.all(),
    store.counters.counts(user, counters.kinds, counters.windowMs),
  ]);
  const notices = marks.seen === null ? 0 : await store.notices.countAfter(marks.seen);
  return {
    extras: {
      notices,
      conversations: unreadOf(memberships),
      reddots: shownReddots(dots, marks.clicks),
      counters: counted.counts,
    },
    marks,
    memberships,
    countersAsOf: counted.asOf,
  };
}

/**
 * readStoredExtras(store, user).extras of every user at once, in input order: what a batch of
 * cold starts (offline delivery) reads. The shared parts are read once per batch (the red dots,
 * the notice count per distinct cursor), the users' own parts in one call each, each
 * conversation once, and no conversation preview: none is part of a badge.
 */
export async function readStoredExtrasOfMany(
  store: BubbleStore,
  users: readonly string[],
  /** The users' own inputs, in input order: store.userInputs(users, counters). */
  inputs: readonly UserInputs[],
): Promise<Array<ExtraCounts & { countersAsOf: number | null }>> {
  if (users.length === 0) return [];
  const [seqs, dots] = await Promise.all([
    store.conversations.membershipSeqs(
      users,
      inputs.map(({ conversations }) => conversations),
    ),
    store.reddots.all(),
  ]);
  const cursors = [
    ...new Set(inputs.map(({ marks }) => marks.seen).filter((seen) => seen !== null)),
  ];
  const counts = await Promise.all(cursors.map((seen) => store.notices.countAfter(seen)));
  const noticesAfter = new Map<number, number>();
  cursors.forEach((seen, i) => noticesAfter.set(seen, counts[i]!));
  return users.map((_, i) => {
    const { marks, counters: counted } = inputs[i]!;
    return {
      notices: marks.seen === null ? 0 : noticesAfter.get(marks.seen)!,
      conversations: unreadOf(seqs[i]!),
      reddots: shownReddots(dots, marks.clicks),
      counters: counted.counts,
      countersAsOf: counted.asOf,
    };
  });
}
