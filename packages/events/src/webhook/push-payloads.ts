import type { WebhookItem } from '@bubble/store';
import type { WebhookDelivery } from './sync-decision.js';

/** An APNs request as a push service would make it: the headers that matter and the payload. */
export interface ApnsRequest {
  headers: { 'apns-push-type': 'alert'; 'apns-priority': '10' | '5' };
  payload: { aps: { badge: number; alert?: { title: string; body: string }; sound?: 'default' } };
}

/** An FCM HTTP v1 `messages:send` body; `token` is the platform's, for the user's device. */
export interface FcmRequest {
  message: {
    token: string;
    notification?: { title: string; body: string };
    android: {
      priority: 'high' | 'normal';
      notification?: { notification_count: number };
    };
    data: { badge: string; seq: string };
  };
}

/**
 * What a push service sends for one delivery (docs/api.md, "Devices in sync"): an increase is an
 * alert naming its newest item, with the icon's number; a decrease is badge-only, silent: APNs
 * sets the icon without a banner or a sound, and an FCM data message lets the app set its count
 * (Android launchers take `notification_count` only from a notification shown).
 */
export function pushRequests(
  delivery: WebhookDelivery,
  token = `<device token of ${delivery.user}>`,
): { apns: ApnsRequest; fcm: FcmRequest } {
  const badge = delivery.badge.total;
  const alert = delivery.shown === null || badge > delivery.shown ? alertOf(delivery.items) : null;
  const data = { badge: String(badge), seq: String(delivery.seq) };
  if (!alert) {
    return {
      apns: {
        headers: { 'apns-push-type': 'alert', 'apns-priority': '5' },
        payload: { aps: { badge } },
      },
      fcm: { message: { token, android: { priority: 'normal' }, data } },
    };
  }
  return {
    apns: {
      headers: { 'apns-push-type': 'alert', 'apns-priority': '10' },
      payload: { aps: { badge, alert, sound: 'default' } },
    },
    fcm: {
      message: {
        token,
        notification: alert,
        android: { priority: 'high', notification: { notification_count: badge } },
        data,
      },
    },
  };
}

/** The newest item as a banner; null when the increase names nothing (a badge-only push). */
function alertOf(items: readonly WebhookItem[]): { title: string; body: string } | null {
  const item = items.at(-1);
  if (!item) return null;
  switch (item.kind) {
    case 'message': {
      const text = item.preview?.['text'];
      return { title: item.from, body: typeof text === 'string' ? text : 'New message' };
    }
    case 'counter':
      return { title: item.counter, body: `New ${item.counter}` };
    case 'notice':
      return { title: 'Notice', body: `Notice ${item.id}` };
  }
}
