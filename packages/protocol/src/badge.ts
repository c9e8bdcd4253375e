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
}

export const EMPTY_COUNTS: Readonly<BadgeCounts> = Object.freeze({
  feed: 0,
  notices: 0,
  conversations: Object.freeze({}) as Record<string, number>,
  conversationsTotal: 0,
  reddots: Object.freeze([]) as unknown as string[],
});

export function displayTotal(total: number, cap: number): string {
  return total > cap ? `${cap}+` : `${total}`;
}

export function badgeTotal(counts: BadgeCounts): number {
  return counts.feed + counts.notices + counts.conversationsTotal;
}

export function makeBadge(
  user: string,
  counts: BadgeCounts,
  stamp: { epoch: string; version: number },
  computedAt: number,
  displayCap: number,
): Badge {
  const total = badgeTotal(counts);
  return {
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
}

/** A strong validator for HTTP caching: the state a client holds is (epoch, version). */
export function badgeEtag(badge: Pick<Badge, 'epoch' | 'version'>): string {
  return `"${badge.epoch}.${badge.version}"`;
}
