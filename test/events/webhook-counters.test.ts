/**
 * Offline delivery of interaction counters (docs/api.md "Offline delivery", source `counters`):
 * an event for a user with no live connection is delivered to that one user with their latest
 * badge and the reason `counters`; a retraction lowers what their phone shows; an online user,
 * or one whose source is not named in BUBBLE_WEBHOOK_SOURCES, gets nothing. A real redis-server
 * and a real local HTTP receiver.
 */
import { waitFor } from '@bubble/test-utils';
import { describe, expect, it } from 'vitest';
import { metricValue, startStack, webhookTestFile } from './webhook-support.js';

const file = webhookTestFile();

async function setUp(sources: Parameters<typeof startStack>[1]) {
  const stack = await file.stack(sources);
  const receiver = await file.receiver({ started: false });
  await receiver.start();
  const workers = await file.workers(stack, receiver.url, { minIntervalMs: 200 });
  return { stack, receiver, workers };
}

describe('offline delivery of interaction counters', () => {
  it('an event reaches the one offline user it is for; a retraction lowers their badge', async () => {
    const { stack, receiver, workers } = await setUp(['conversations', 'counters', 'notices']);
    const { service } = stack;
    await service.setPresence('online', true, 60_000);
    await service.ingestCounterEvents([
      { user: 'phone', kind: 'mention', id: 'm1' },
      { user: 'phone', kind: 'like', id: 'l1' },
      { user: 'online', kind: 'like', id: 'l1' },
    ]);
    const latestOf = (user: string) => receiver.deliveriesByUser().get(user)?.at(-1)?.delivery;
    await waitFor(() => latestOf('phone')?.badge.total === 2, { message: 'phone sees 2' });
    expect(latestOf('phone')!.badge.counters).toEqual({ like: 1, mention: 1 });
    expect(latestOf('phone')!.reasons).toEqual(['counters']);

    await service.retractCounterEvent('phone', 'like', 'l1');
    await waitFor(() => latestOf('phone')?.badge.total === 1, {
      timeoutMs: 10_000,
      message: "phone's badge back to 1",
    });
    expect(latestOf('phone')!.badge.counters).toEqual({ mention: 1 });
    await waitFor(async () => (await workers.stats()).queued === 0, { message: 'queue empty' });
    // Only the users the events were for: the online one is left out.
    expect([...receiver.deliveriesByUser().keys()]).toEqual(['phone']);
    expect(
      await metricValue(workers.registry, 'bubble_webhook_skipped_online_total'),
    ).toBeGreaterThanOrEqual(1);
  });

  it('without `counters` in BUBBLE_WEBHOOK_SOURCES an event is not delivered', async () => {
    const { stack, receiver, workers } = await setUp(['conversations', 'notices']);
    const { service } = stack;
    await service.ingestCounterEvents([{ user: 'quiet', kind: 'mention', id: 'm1' }]);
    // A notice is delivered to the seen users; the counter event before it never is.
    await service.badge('quiet', { seen: true });
    await service.publishNotice(1);
    await waitFor(() => receiver.deliveriesByUser().get('quiet')?.length === 1, {
      message: 'the notice delivered',
    });
    await waitFor(async () => (await workers.stats()).queued === 0, { message: 'queue empty' });
    const deliveries = receiver.deliveriesByUser().get('quiet')!;
    expect(deliveries.map((d) => d.delivery.reasons)).toEqual([['notices']]);
  });
});
