import type { Badge } from '@bubble/protocol';
import type { DueUser, WebhookItem } from '@bubble/store';

/** One delivery of a request body (docs/api.md, "Offline delivery" and "Devices in sync"). */
export interface WebhookDelivery {
  user: string;
  badge: Badge;
  reasons: string[];
  /** The total delivered before this one, null for the first. */
  shown: number | null;
  /** Increasing per user: a push service drops an entry older than one it applied. */
  seq: number;
  /** What caused an increase (empty for a decrease), oldest first, at most 10. */
  items: WebhookItem[];
}

/**
 * Whether a due user is delivered now, and what: when their total differs from what bubble last
 * delivered (`shown`, taken as 0 before the first) and either they have no live connection, or
 * the total went down (their other devices' icons are corrected). Null: nothing to send.
 * The seq follows the clock, so it stays increasing after bubble forgot the user (trimShown).
 */
export function deliveryFor(
  due: DueUser,
  online: boolean,
  badge: Badge,
  now: number,
): WebhookDelivery | null {
  const shown = due.shown?.total ?? null;
  const decrease = shown !== null && badge.total < shown;
  if (online ? !decrease : badge.total === (shown ?? 0)) return null;
  return {
    user: due.user,
    badge,
    reasons: decrease ? due.reasons : due.reasons.filter((reason) => reason !== 'read'),
    shown,
    seq: Math.max((due.shown?.seq ?? 0) + 1, Math.floor(now)),
    items: decrease ? [] : due.items,
  };
}
