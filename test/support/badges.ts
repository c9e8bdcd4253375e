import type { Badge } from '@bubble/protocol';

export type BadgeState = Omit<Badge, 'user' | 'epoch' | 'version' | 'computedAt'>;

/** What a badge says, without whose it is and its stamp (epoch, version, computedAt). */
export function badgeState(badge: Badge): BadgeState {
  return {
    feed: badge.feed,
    notices: badge.notices,
    conversations: badge.conversations,
    conversationsTotal: badge.conversationsTotal,
    reddots: badge.reddots,
    // Present only when the user has a non-zero counter, as in the badge itself.
    ...(badge.counters && { counters: badge.counters }),
    total: badge.total,
    display: badge.display,
  };
}
