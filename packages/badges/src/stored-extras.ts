import type { BubbleStore, Membership, UserMarksState } from '@bubble/store';
import { shownReddots, unreadOf, type ExtraCounts } from './badge-fields.js';

export interface StoredExtras {
  extras: ExtraCounts;
  marks: UserMarksState;
  memberships: Membership[];
}

/**
 * A user's notices, conversations (maxSeq − readSeq) and red dots from the stored sources: the
 * cold start's answer, and what reconciliation compares a core's held extras with. `marked`
 * (every marked red dot) may be passed in when many users are read at once.
 */
export async function readStoredExtras(
  store: BubbleStore,
  user: string,
  marked?: Readonly<Record<string, number>>,
): Promise<StoredExtras> {
  const [marks, memberships, dots] = await Promise.all([
    store.marks.state(user),
    store.conversations.memberships(user),
    marked ?? store.reddots.all(),
  ]);
  const notices = marks.seen === null ? 0 : await store.notices.countAfter(marks.seen);
  return {
    extras: {
      notices,
      conversations: unreadOf(memberships),
      reddots: shownReddots(dots, marks.clicks),
    },
    marks,
    memberships,
  };
}
