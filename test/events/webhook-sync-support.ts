/**
 * The scenarios of "Devices in sync" (docs/api.md), run by webhook-sync.test.ts (one
 * redis-server) and webhook-sync-cluster.test.ts (Redis Cluster), each with two delivery workers
 * (two gateways' senders) and the real receiver: a user's phone is the receiver, their desktop a
 * live connection (presence).
 */
import type { WebhookDelivery } from '@bubble/events';
import { waitFor } from '@bubble/test-utils';
import { expect } from 'vitest';
import type { Stack, TestReceiver, Workers } from './webhook-support.js';

/** The tests' BUBBLE_WEBHOOK_MIN_INTERVAL_MS. */
export const SYNC_INTERVAL_MS = 500;
/** A correction arrives within the interval plus one delivery (docs/api.md). */
const CORRECTED_WITHIN_MS = SYNC_INTERVAL_MS + 2_500;

export interface SyncRig {
  stack: Stack;
  receiver: TestReceiver;
  workers: Workers[];
}

export function deliveriesOf(receiver: TestReceiver, user: string): WebhookDelivery[] {
  return (receiver.deliveriesByUser().get(user) ?? []).map((d) => d.delivery);
}

function latestOf(receiver: TestReceiver, user: string): WebhookDelivery | undefined {
  return deliveriesOf(receiver, user).at(-1);
}

/** The phone shows `total`: the latest delivery to it carries it. */
export async function phoneShows(
  receiver: TestReceiver,
  user: string,
  total: number,
  timeoutMs = CORRECTED_WITHIN_MS,
): Promise<WebhookDelivery> {
  await waitFor(() => latestOf(receiver, user)?.badge.total === total, {
    timeoutMs,
    message: `${user}'s phone shows ${total}`,
  });
  return latestOf(receiver, user)!;
}

/** Every job expanded, no user queued, no batch waiting: nothing more will be sent. */
export async function settled(rig: SyncRig): Promise<void> {
  await waitFor(
    async () => {
      const stats = await rig.workers[0]!.stats();
      return stats.jobs === 0 && stats.queued === 0 && stats.retrying === 0 && stats.deferred === 0;
    },
    { timeoutMs: 10_000, message: 'offline delivery settled' },
  );
}

/** Seqs strictly increasing over a user's deliveries, each delivery's shown the total before. */
export function expectInOrder(deliveries: readonly WebhookDelivery[]): void {
  for (let i = 1; i < deliveries.length; i++) {
    expect(deliveries[i]!.seq).toBeGreaterThan(deliveries[i - 1]!.seq);
    expect(deliveries[i]!.shown).toBe(deliveries[i - 1]!.badge.total);
  }
}

/**
 * A read on the desktop corrects the phone within the interval, then a read that changes nothing
 * sends nothing. `ann` gets messages while away (her phone shows them, with what they said), then
 * opens the desktop and reads.
 */
export async function readOnDesktopCorrectsPhone(rig: SyncRig, prefix: string): Promise<void> {
  const { service } = rig.stack;
  const ann = `${prefix}ann`;
  const bob = `${prefix}bob`;
  const pair = `${prefix}pair`;
  await service.replaceMembers(pair, [ann, bob]);
  await service.ingestMessages(pair, [
    { seq: 1, from: bob, preview: { text: 'lunch?' } },
    { seq: 2, from: bob, preview: { text: 'at noon' } },
  ]);
  const first = await phoneShows(rig.receiver, ann, 2);
  expect(first.shown).toBeNull();
  expect(first.reasons).toEqual(['conversations']);
  expect(first.items.at(-1)).toEqual({
    kind: 'message',
    conversation: pair,
    seq: 2,
    from: bob,
    preview: { text: 'at noon' },
  });

  await service.setPresence(ann, true, 60_000);
  const answered = await service.read(ann, { scope: 'conversation', id: pair });
  expect(answered.total).toBe(0);
  const corrected = await phoneShows(rig.receiver, ann, 0);
  expect(corrected.shown).toBe(2);
  expect(corrected.reasons).toContain('read');
  expect(corrected.items).toEqual([]);
  expect(corrected.seq).toBeGreaterThan(first.seq);

  // Nothing changed: the same read again, and a read of another scope, send nothing.
  await service.read(ann, { scope: 'conversation', id: pair });
  await service.read(ann, { scope: 'feed' });
  await settled(rig);
  expect(deliveriesOf(rig.receiver, ann)).toHaveLength(2);
  // bob never had a delivery (he sent): his read costs nothing and sends nothing.
  await service.read(bob, { scope: 'all' });
  await settled(rig);
  expect(deliveriesOf(rig.receiver, bob)).toEqual([]);
}

/**
 * Every source that lowers a total corrects the phone of a user whose desktop is live: a
 * withdrawn notice, a retracted counter, a conversation left, one dissolved, a deleted post, a
 * read. Each delivery carries the total before it as `shown`, and the source in `reasons`.
 */
export async function everyDecreaseCorrectsPhone(rig: SyncRig, prefix: string): Promise<void> {
  const { service } = rig.stack;
  const eve = `${prefix}eve`;
  const author = `${prefix}writer`;
  const kept = `${prefix}kept`;
  const dissolved = `${prefix}dissolved`;
  const left = `${prefix}left`;
  const now = Date.now();
  await service.follow(eve, author);
  await service.ingestPosts([{ author, id: `${prefix}p1`, ts: now - 60_000 }]);
  // Seen: a notice reaches the users seen within the inactive window.
  await service.badge(eve, { seen: true });
  for (const conversation of [kept, dissolved, left]) {
    await service.replaceMembers(conversation, [eve, `${conversation}-friend`]);
    await service.ingestMessages(conversation, [{ seq: 1, from: `${conversation}-friend` }]);
  }
  const notice = 1 + (now % 1_000_000);
  await service.publishNotice(notice);
  await service.ingestCounterEvents([{ user: eve, kind: 'mention', id: 'm1' }]);
  // feed 1 + notice 1 + three conversations + a mention.
  expect((await service.badge(eve)).total).toBe(6);
  await phoneShows(rig.receiver, eve, 6);
  const before = deliveriesOf(rig.receiver, eve).length;

  await service.setPresence(eve, true, 60_000);
  const steps: Array<[reason: string, lower: () => Promise<unknown>]> = [
    ['notices', () => service.withdrawNotice(notice)],
    ['counters', () => service.retractCounterEvent(eve, 'mention', 'm1')],
    ['conversations', () => service.removeMember(left, eve)],
    ['conversations', () => service.dissolve(dissolved)],
    ['feed', () => service.deletePost(author, `${prefix}p1`)],
    ['read', () => service.read(eve, { scope: 'conversation', id: kept })],
  ];
  let shown = 6;
  for (const [reason, lower] of steps) {
    await lower();
    const delivery = await phoneShows(rig.receiver, eve, shown - 1);
    expect(delivery.shown).toBe(shown);
    expect(delivery.reasons).toContain(reason);
    shown--;
  }
  expect(shown).toBe(0);
  expectInOrder(deliveriesOf(rig.receiver, eve));
  // A red dot changes no total: clicking it sends nothing.
  await service.markReddot(`${prefix}dot`);
  await service.read(eve, { scope: 'reddot', name: `${prefix}dot` });
  await settled(rig);
  expect(deliveriesOf(rig.receiver, eve).at(-1)!.badge.total).toBe(0);
  expect(deliveriesOf(rig.receiver, eve)).toHaveLength(before + steps.length);
}

/**
 * A user who comes online before a due increase is delivered gets none (their desktop shows it),
 * but a decrease afterwards still corrects what their phone shows.
 */
export async function onlineBeforeIncrease(rig: SyncRig, prefix: string): Promise<void> {
  const { service } = rig.stack;
  const lee = `${prefix}lee`;
  const pal = `${prefix}pal`;
  const pair = `${prefix}lee-pair`;
  await service.replaceMembers(pair, [lee, pal]);
  await service.ingestMessages(pair, [{ seq: 1, from: pal }]);
  await phoneShows(rig.receiver, lee, 1);
  // Within the interval after that delivery: due at its end, and lee comes online before it.
  await service.ingestMessages(pair, [{ seq: 2, from: pal }]);
  await service.setPresence(lee, true, 60_000);
  await settled(rig);
  expect(deliveriesOf(rig.receiver, lee).map((d) => d.badge.total)).toEqual([1]);
  // Read on the desktop: from the 1 the phone shows to 0.
  await service.read(lee, { scope: 'conversation', id: pair });
  const corrected = await phoneShows(rig.receiver, lee, 0);
  expect(corrected.shown).toBe(1);
  expect(corrected.reasons).toContain('read');
}

/**
 * Order under retries: a delivery refused twice is retried with the same id and seq, and the
 * user's next one (queued meanwhile, held while the first is pending) comes after it with a
 * higher seq and the first's total as `shown`.
 */
export async function orderUnderRetries(rig: SyncRig, prefix: string): Promise<void> {
  const { service } = rig.stack;
  const ray = `${prefix}ray`;
  const pal = `${prefix}ray-pal`;
  const pair = `${prefix}ray-pair`;
  let refused = 0;
  rig.receiver.answer = (request) =>
    request.deliveries.some((d) => d.user === ray) && refused++ < 2
      ? { status: 503 }
      : { status: 200 };
  await service.replaceMembers(pair, [ray, pal]);
  await service.ingestMessages(pair, [{ seq: 1, from: pal }]);
  await waitFor(() => refused >= 1, { message: 'the first delivery refused' });
  await service.ingestMessages(pair, [{ seq: 2, from: pal }]);
  await phoneShows(rig.receiver, ray, 2, 10_000);
  await settled(rig);
  const tries = rig.receiver.requests.flatMap((request) =>
    request.deliveries.filter((d) => d.user === ray).map((d) => ({ id: request.id, d })),
  );
  // Every try of one id carries the same entry.
  for (const { id, d } of tries) {
    expect(d).toEqual(tries.find((t) => t.id === id)!.d);
  }
  expect(new Set(tries.map((t) => t.id)).size).toBeLessThan(tries.length);
  const delivered = deliveriesOf(rig.receiver, ray);
  expect(delivered.map((d) => d.badge.total)).toEqual([1, 2]);
  expectInOrder(delivered);
  expect(delivered[0]!.shown).toBeNull();
}
