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

export const EMPTY_COUNTS: Readonly<BadgeCounts> = Object.freeze({
  feed: 0,
  notices: 0,
  conversations: Object.freeze({}) as Record<string, number>,
  conversationsTotal: 0,
  reddots: Object.freeze([]) as unknown as string[],
  counters: Object.freeze({}) as Record<string, number>,
});

export function displayTotal(total: number, cap: number): string {
  return total > cap ? `${cap}+` : `${total}`;
}

export function badgeTotal(counts: BadgeCounts): number {
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

/** What a holder (a connection, a cache, a client) has of a badge; a null epoch: nothing yet. */
export interface BadgeStamp {
  readonly epoch: string | null;
  readonly version: number;
}

/**
 * The one "is this badge newer" rule of the contract (docs/api.md): `next` replaces what is held
 * when nothing is held, when it is of another epoch (the stored state was lost and started over:
 * the new epoch wins whatever its version), or when its version is greater within the same epoch.
 * The SDK, which imports nothing, keeps a copy (packages/client/src/contract.ts) that a test
 * proves equal to this one.
 */
export function isNewerBadge(
  next: { readonly epoch: string; readonly version: number },
  held: BadgeStamp | null | undefined,
): boolean {
  return !held || held.epoch !== next.epoch || next.version > held.version;
}

/** A strong validator for HTTP caching: the state a client holds is (epoch, version). */
export function badgeEtag(badge: Pick<Badge, 'epoch' | 'version'>): string {
  return `"${badge.epoch}.${badge.version}"`;
}
