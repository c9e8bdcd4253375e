import type { ShownBadge, WebhookItem } from './webhook-queue.js';

/** Items as the due set holds them: JSON texts joined by the record separator (scheduleDeliveries-10). */
const ITEM_SEPARATOR = '\x1e';

export function joinItems(items: readonly WebhookItem[] | undefined): string {
  return items ? items.map((item) => JSON.stringify(item)).join(ITEM_SEPARATOR) : '';
}

export function splitItems(text: string): WebhookItem[] {
  return text === ''
    ? []
    : text.split(ITEM_SEPARATOR).map((item) => JSON.parse(item) as WebhookItem);
}

/** `shown` as the scripts keep it: "<total>,<seq>", '' when never delivered. */
export function shownBadge(text: string): ShownBadge | null {
  if (text === '') return null;
  const [total, seq] = text.split(',').map(Number);
  return { total: total!, seq: seq! };
}
