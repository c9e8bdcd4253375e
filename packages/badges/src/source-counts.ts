import { ownValue, type ExtraCounts } from '@bubble/protocol';
import type { MembershipSeqs } from '@bubble/store';

/** The counts of a badge's extras, from what is stored of their sources. */

/** notices(u) of docs/semantics.md over live ids in ascending order: those above the cursor. */
export function countNoticesAfter(liveIds: ArrayLike<number>, seen: number | null): number {
  if (seen === null) return 0;
  let lo = 0;
  let hi = liveIds.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (liveIds[mid]! <= seen) lo = mid + 1;
    else hi = mid;
  }
  return liveIds.length - lo;
}

/** A red dot shows while it is marked and the user has not clicked it since. */
export function shownReddots(
  marked: Readonly<Record<string, number>>,
  clicks: Readonly<Record<string, number>>,
): string[] {
  const shown: string[] = [];
  for (const name of Object.keys(marked)) {
    const clicked = ownValue(clicks, name);
    if (clicked === undefined || clicked < marked[name]!) shown.push(name);
  }
  return shown;
}

export function unreadOf(memberships: readonly MembershipSeqs[]): ExtraCounts['conversations'] {
  return memberships.map((m) => ({
    id: m.conversation,
    unread: Math.max(0, m.maxSeq - m.readSeq),
    muted: m.muted,
  }));
}
