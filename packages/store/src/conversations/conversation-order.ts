import type { Membership } from './conversations.js';

/** The conversation list's order (docs/semantics.md): newest activity, then higher seq, then id. */
export function byActivity(
  a: Pick<Membership, 'conversation' | 'lastTs' | 'maxSeq'>,
  b: Pick<Membership, 'conversation' | 'lastTs' | 'maxSeq'>,
): number {
  return (
    b.lastTs - a.lastTs ||
    b.maxSeq - a.maxSeq ||
    (a.conversation < b.conversation ? -1 : a.conversation > b.conversation ? 1 : 0)
  );
}

/** BUBBLE_LARGE_GROUP's default: above it, a message is not written per member. */
export const DEFAULT_LARGE_GROUP = 500;
/** Entries a user's activity index keeps: the list serves at most 100. */
export const DEFAULT_LIST_INDEX_SIZE = 200;
