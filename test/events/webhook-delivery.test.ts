/**
 * Offline delivery end to end on a real redis-server and a real local HTTP receiver: the receiver
 * down then up (every delivery arrives, none twice for its idempotency key, signatures verify,
 * no user more often than the minimum interval, each carrying their latest badge), and a user
 * who comes online before their delivery is due gets none.
 */
import { waitFor } from '@bubble/test-utils';
import { describe, expect, it } from 'vitest';
import { membersNamed, metricValue, startWorkers, webhookTestFile } from './webhook-support.js';

const file = webhookTestFile();

async function setUp(options: Parameters<typeof startWorkers>[2] = {}) {
  const stack = await file.stack();
  const receiver = await file.receiver({ started: false });
  const workers = await file.workers(stack, receiver.url, options);
  return { stack, receiver, workers };
}

describe('offline delivery', () => {
  it('has at most `concurrency` requests in flight, and fills every slot when users are due', async () => {
    const { stack, receiver } = await setUp({ concurrency: 3, batchSize: 5 });
    await receiver.start();
    let release!: () => void;
    receiver.gate = new Promise((resolve) => (release = resolve));
    const members = membersNamed('slot', 40);
    await stack.service.replaceMembers('wide', members);
    await stack.service.ingestMessages('wide', [{ seq: 1, from: 'slot0' }]);
    await waitFor(() => receiver.open === 3, { message: 'three requests held' });
    // Eight batches are due: three are in flight, the users of the others stay queued. The
    // sender is scheduled on their own, first: when taken alone, their batch sends nothing.
    await waitFor(
      async () => [40 - 15, 40 - 16].includes((await stack.queue.stats(Date.now())).queued),
      {
        message: 'the users of five batches queued',
      },
    );
    expect(receiver.maxOpen).toBe(3);
    receiver.gate = null;
    release();
    // The sender's total stays 0, what their phone shows: they are not delivered.
    await waitFor(() => receiver.deliveriesByUser().size === members.length - 1, {
      message: 'every member but the sender delivered',
    });
    expect(receiver.maxOpen).toBe(3);
    expect(receiver.accepted().every((r) => r.deliveries.length <= 5)).toBe(true);
  });

  it('the receiver down, then up: every delivery arrives once per key, signed, at most one per user per interval, with the latest badge', async () => {
    const MIN_INTERVAL = 400;
    const { stack, receiver, workers } = await setUp({ minIntervalMs: MIN_INTERVAL });
    const { service } = stack;
    const members = membersNamed('m', 150);
    await service.replaceMembers('team', members);
    // m0 sends everything from the app (online); m1 is muted; m2 is online: none of them is
    // delivered.
    await service.setPresence('m0', true, 60_000);
    await service.setMuted('m1', 'team', true);
    await service.setPresence('m2', true, 60_000);
    const expected = members.slice(3);

    // The receiver is down (nothing listens on its port): every request is refused and retried.
    for (let seq = 1; seq <= 4; seq++) {
      await service.ingestMessages('team', [{ seq, from: 'm0' }]);
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
    await waitFor(
      async () => (await metricValue(workers.registry, 'bubble_webhook_retries_total')) >= 4,
      {
        message: 'refused requests retried',
      },
    );
    expect(receiver.requests).toHaveLength(0);
    expect((await workers.stats()).retrying).toBeGreaterThan(0);

    await receiver.start();
    await service.ingestMessages('team', [{ seq: 5, from: 'm0' }]);
    const latestOf = (user: string) => receiver.deliveriesByUser().get(user)?.at(-1)?.delivery;
    await waitFor(
      () => expected.every((user) => latestOf(user)?.badge.conversations['team'] === 5),
      {
        timeoutMs: 20_000,
        message: 'every offline member has their latest badge',
      },
    );

    const byUser = receiver.deliveriesByUser();
    expect([...byUser.keys()].sort()).toEqual([...expected].sort());
    for (const request of receiver.requests) {
      expect(request.signatureValid).toBe(true);
      expect(request.idempotencyKey).toBe(request.id);
      expect(request.contentType).toBe('application/json');
      expect(request.deliveries.length).toBeGreaterThanOrEqual(1);
      expect(request.deliveries.length).toBeLessThanOrEqual(100);
    }
    const acceptedKeys = receiver.accepted().map((r) => r.idempotencyKey);
    expect(new Set(acceptedKeys).size).toBe(acceptedKeys.length);
    for (const [user, deliveries] of byUser) {
      // Retries resend one id; a user's distinct deliveries arrive at least an interval apart.
      for (let i = 1; i < deliveries.length; i++) {
        const gap = deliveries[i]!.at - deliveries[i - 1]!.at;
        expect(gap, `${user}'s deliveries ${i - 1} and ${i}`).toBeGreaterThanOrEqual(
          MIN_INTERVAL - 50,
        );
      }
      expect(deliveries.at(-1)!.delivery.reasons).toEqual(['conversations']);
      // The cold-start badge, as the platform would read it now.
      const now = await service.badge(user);
      expect(deliveries.at(-1)!.delivery.badge.total).toBe(now.total);
    }
    // Coalescing: 5 messages reached each user in fewer deliveries than that.
    const deliveriesSent = await metricValue(workers.registry, 'bubble_webhook_deliveries_total', {
      outcome: 'sent',
    });
    expect(deliveriesSent).toBeLessThan(expected.length * 5);
    expect(await metricValue(workers.registry, 'bubble_webhook_coalesced_total')).toBeGreaterThan(
      0,
    );
    await waitFor(async () => (await workers.stats()).retrying === 0, { message: 'nothing left' });
    const stats = await workers.stats();
    expect(stats).toMatchObject({ queued: 0, deadLetters: 0 });
  });

  it('a user who comes online before their delivery is due gets none', async () => {
    // The interval is the window in which bob's second delivery waits, queued: wide enough that a
    // loaded machine's polls see it there (1.5 s was missed once in CI).
    const { stack, receiver, workers } = await setUp({ minIntervalMs: 6_000 });
    const { service } = stack;
    await receiver.start();
    await service.replaceMembers('pair', ['alice', 'bob']);
    await service.setPresence('alice', true, 60_000);
    await service.ingestMessages('pair', [{ seq: 1, from: 'alice' }]);
    await waitFor(() => receiver.deliveriesByUser().get('bob')?.length === 1, {
      message: 'bob delivered once',
    });
    // The next change is due an interval after the first delivery; bob opens the app before.
    await service.ingestMessages('pair', [{ seq: 2, from: 'alice' }]);
    await waitFor(async () => (await workers.stats()).queued === 1, { message: 'bob queued' });
    await service.setPresence('bob', true, 60_000);
    await waitFor(
      async () => (await metricValue(workers.registry, 'bubble_webhook_skipped_online_total')) >= 1,
      { timeoutMs: 15_000, message: 'bob left out as online' },
    );
    await waitFor(async () => (await workers.stats()).queued === 0, { message: 'queue empty' });
    expect(receiver.deliveriesByUser().get('bob')).toHaveLength(1);
    expect(receiver.deliveriesByUser().has('alice')).toBe(false);
  });

  it('an offline sender is delivered: their own message marked the conversation read, lowering the count their phone shows', async () => {
    const { stack, receiver, workers } = await setUp({ minIntervalMs: 200 });
    const { service } = stack;
    await receiver.start();
    await service.replaceMembers('pair', ['carol', 'dave']);
    await service.setPresence('dave', true, 60_000);
    await service.ingestMessages('pair', [
      { seq: 1, from: 'dave' },
      { seq: 2, from: 'dave' },
    ]);
    const latestOf = (user: string) => receiver.deliveriesByUser().get(user)?.at(-1)?.delivery;
    await waitFor(() => latestOf('carol')?.badge.total === 2, { message: 'carol sees 2' });
    // carol answers from another device (a platform sending on her behalf): her phone must drop
    // to 0 although nothing new reached her.
    await service.ingestMessages('pair', [{ seq: 3, from: 'carol' }]);
    await waitFor(() => latestOf('carol')?.badge.total === 0, {
      timeoutMs: 10_000,
      message: "carol's phone back to 0",
    });
    expect(latestOf('carol')!.reasons).toEqual(['read']);
    expect(latestOf('carol')!.shown).toBe(2);
    await waitFor(async () => (await workers.stats()).queued === 0, { message: 'queue empty' });
  });
});
