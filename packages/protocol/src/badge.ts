/** The badge object of the contract (../docs/api.md). Every field is always present. */
export interface Badge {
  user: string;
  epoch: string;
  version: number;
  feed: number;
  notices: number;
  conversations: Record<string, number>;
  conversationsTotal: number;
  reddots: string[];
  /** Interaction counters, non-zero kinds only; absent when there is none. */
  counters?: Record<string, number>;
  total: number;
  display: string;
  computedAt: number;
}

/** The counts a badge is made of; two badges with equal counts are the same state. */
export interface BadgeCounts {
  feed: number;
  notices: number;
  conversations: Record<string, number>;
  conversationsTotal: number;
  reddots: string[];
  /** kind → count, non-zero only */
  counters: Record<string, number>;
}

export function displayTotal(total: number, cap: number): string {
  return total > cap ? `${cap}+` : `${total}`;
}

function badgeTotal(counts: BadgeCounts): number {
  let counters = 0;
  for (const kind in counts.counters) counters += counts.counters[kind]!;
  return counts.feed + counts.notices + counts.conversationsTotal + counters;
}

export function makeBadge(
  user: string,
  counts: BadgeCounts,
  stamp: { epoch: string; version: number },
  computedAt: number,
  displayCap: number,
): Badge {
  const total = badgeTotal(counts);
  const badge: Badge = {
    user,
    epoch: stamp.epoch,
    version: stamp.version,
    feed: counts.feed,
    notices: counts.notices,
    conversations: { ...counts.conversations },
    conversationsTotal: counts.conversationsTotal,
    reddots: [...counts.reddots],
    total,
    display: displayTotal(total, displayCap),
    computedAt,
  };
  if (Object.keys(counts.counters).length > 0) badge.counters = { ...counts.counters };
  return badge;
}

/** A strong validator for HTTP caching: the state a client holds is (epoch, version). */
export function badgeEtag(badge: Pick<Badge, 'epoch' | 'version'>): string {
  return `"${badge.epoch}.${badge.version}"`;
}
