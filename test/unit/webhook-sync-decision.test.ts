/**
 * Devices in sync's decision (sync-decision.ts) against its definition in docs/semantics.md: a
 * due user is sent when total ≠ shown (0 before the first) and either offline or the total went
 * down; and the APNs/FCM requests an entry maps to (push-payloads.ts, docs/api.md).
 */
import { deliveryFor, pushRequests } from '@bubble/events';
import type { Badge } from '@bubble/protocol';
import type { DueUser } from '@bubble/store';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

const badgeOf = (total: number): Badge => ({
  user: 'u',
  epoch: 'e',
  version: 1,
  feed: total,
  notices: 0,
  conversations: {},
  conversationsTotal: 0,
  reddots: [],
  total,
  display: String(total),
  computedAt: 0,
});

const dueOf = (shown: number | null, seq = 5): DueUser => ({
  user: 'u',
  reasons: ['conversations', 'read'],
  items: [{ kind: 'message', conversation: 'c', seq: 3, from: 'bob', preview: { text: 'hi' } }],
  shown: shown === null ? null : { total: shown, seq },
});

describe('deliveryFor', () => {
  it('is the definition: total ≠ shown, and offline or a decrease', () => {
    fc.assert(
      fc.property(
        fc.option(fc.nat(20), { nil: null }),
        fc.nat(20),
        fc.boolean(),
        (shown, total, online) => {
          const sent = deliveryFor(dueOf(shown), online, badgeOf(total), 1_000) !== null;
          const before = shown ?? 0;
          const due = total !== before && (!online || (shown !== null && total < shown));
          expect(sent).toBe(due);
        },
      ),
    );
  });

  it('a decrease keeps `read` and names no items; an increase names its items and not `read`', () => {
    const down = deliveryFor(dueOf(4), true, badgeOf(1), 1_000)!;
    expect(down).toMatchObject({ shown: 4, reasons: ['conversations', 'read'], items: [] });
    const up = deliveryFor(dueOf(1), false, badgeOf(2), 1_000)!;
    expect(up.reasons).toEqual(['conversations']);
    expect(up.items).toHaveLength(1);
  });

  it('seq follows the clock and stays above the last one', () => {
    expect(deliveryFor(dueOf(null), false, badgeOf(1), 1_000)!.seq).toBe(1_000);
    expect(deliveryFor(dueOf(3, 2_000), false, badgeOf(1), 1_000)!.seq).toBe(2_001);
  });
});

describe('pushRequests', () => {
  it('an increase is an alert from its newest item; a decrease a silent badge', () => {
    const up = pushRequests(deliveryFor(dueOf(1), false, badgeOf(2), 1_000)!, 'tok');
    expect(up.apns).toEqual({
      headers: { 'apns-push-type': 'alert', 'apns-priority': '10' },
      payload: { aps: { badge: 2, alert: { title: 'bob', body: 'hi' }, sound: 'default' } },
    });
    expect(up.fcm.message).toMatchObject({
      token: 'tok',
      notification: { title: 'bob', body: 'hi' },
      android: { priority: 'high', notification: { notification_count: 2 } },
    });
    const down = pushRequests(deliveryFor(dueOf(4), true, badgeOf(0), 1_000)!, 'tok');
    expect(down.apns.payload).toEqual({ aps: { badge: 0 } });
    expect(down.apns.headers['apns-priority']).toBe('5');
    expect(down.fcm.message).toEqual({
      token: 'tok',
      android: { priority: 'normal' },
      data: { badge: '0', seq: '1000' },
    });
  });
});
