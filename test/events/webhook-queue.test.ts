/**
 * The offline-delivery queue's scripts on a real redis-server, driven directly: coalescing (one
 * entry per user, reasons merged), the minimum interval after a delivery, one delivery at a time
 * per user, a lapsed lease queued again, shedding the oldest past the bound; and a notice's job
 * reaching the offline users seen within the inactive window.
 */
import { uniquePrefix, waitFor } from '@bubble/test-utils';
import { describe, expect, it } from 'vitest';
import { BadgeService } from '@bubble/badges';
import { redisOfflineJobs } from '@bubble/events';
import { systemClock } from '@bubble/protocol';
import { RedisStore, RedisWebhookQueue } from '@bubble/store';
import { webhookTestFile, type Stack } from './webhook-support.js';

const file = webhookTestFile();
const { cleanups } = file;

async function stack(): Promise<Stack> {
  const made = await file.stack();
  return made;
}

const page = (users: string[], reason: string, now: number, bound = 1_000) => ({
  now,
  intervalMs: 1_000,
  bound,
  consumer: 'c',
  job: '',
  nextCursor: '',
  users,
  reason,
});

describe('the offline-delivery queue', () => {
  it('keeps one entry per user with the reasons merged, and sheds the oldest past the bound', async () => {
    const { queue } = await stack();
    expect(await queue.schedule(page(['a', 'b'], 'conversations', 1_000))).toEqual({
      added: 2,
      coalesced: 0,
      shed: 0,
    });
    expect(await queue.schedule(page(['a'], 'notices', 1_100))).toEqual({
      added: 0,
      coalesced: 1,
      shed: 0,
    });
    const taken = await queue.takeDue(2_000, 9_000, 100, 1_000);
    expect(taken).toEqual([
      { user: 'a', reasons: ['conversations', 'notices'], items: [], shown: null },
      { user: 'b', reasons: ['conversations'], items: [], shown: null },
    ]);
    await queue.schedule(page(['u1', 'u2', 'u3'], 'notices', 3_000));
    const shed = await queue.schedule(page(['u4', 'u5'], 'notices', 3_100, 3));
    expect(shed).toEqual({ added: 2, coalesced: 0, shed: 2 });
    const left = await queue.takeDue(8_000, 20_000, 100, 1_000);
    expect(left.map((d) => d.user).sort()).toEqual(['u3', 'u4', 'u5']);
  });

  it('a user is due an interval after their last delivery, and has one delivery at a time', async () => {
    const { queue } = await stack();
    await queue.schedule(page(['a'], 'conversations', 1_000));
    const [first] = await queue.takeDue(1_000, 5_000, 100, 1_000);
    const sent = [{ user: 'a', total: 3, seq: 1_000 }];
    await queue.storeBatch({ id: 'b1', body: '{}', leaseUntil: 9_000, now: 1_000, sent, left: [] });
    // Queued again while b1 is not delivered: not taken, however due.
    await queue.schedule(page(['a'], 'notices', 1_200));
    expect(await queue.takeDue(1_500, 5_000, 100, 1_000)).toEqual([]);
    expect(await queue.finishBatch('b1', 1_600, 1_000, [first!.user])).toBe(true);
    // Delivered at 1600: not before 2600.
    expect(await queue.takeDue(2_599, 5_000, 100, 1_000)).toEqual([]);
    expect(await queue.takeDue(2_600, 5_000, 100, 1_000)).toEqual([
      { user: 'a', reasons: ['notices'], items: [], shown: { total: 3, seq: 1_000 } },
    ]);
  });

  it('users whose sender died before storing their batch are queued again when the lease lapses', async () => {
    const { queue } = await stack();
    await queue.schedule(page(['a', 'b'], 'conversations', 1_000));
    expect(await queue.takeDue(1_000, 3_000, 100, 0)).toHaveLength(2);
    expect(await queue.takeDue(2_999, 6_000, 100, 0)).toEqual([]);
    const again = await queue.takeDue(3_000, 6_000, 100, 0);
    expect(again.map((d) => d.user).sort()).toEqual(['a', 'b']);
    expect(again[0]!.reasons).toEqual(['conversations']);
  });

  it('a batch whose sender died mid-request is claimed again after its lease, its attempt counted', async () => {
    const { queue } = await stack();
    await queue.storeBatch({
      id: 'b1',
      body: 'body',
      leaseUntil: 5_000,
      now: 1_000,
      sent: [{ user: 'a', total: 1, seq: 1 }],
      left: [],
    });
    expect(await queue.claimBatches(4_999, 9_000, 10)).toEqual([]);
    expect(await queue.claimBatches(5_000, 9_000, 10)).toEqual([
      { id: 'b1', body: 'body', attempt: 2 },
    ]);
    expect(await queue.claimBatches(8_999, 9_000, 10)).toEqual([]);
  });

  it('a retried write that changed nothing still appends its job; an unnamed source appends none', async () => {
    const store = new RedisStore({
      url: file.redis.url,
      keyPrefix: uniquePrefix('whj'),
      pools: 100,
    });
    cleanups.push(() => store.close());
    const queue = new RedisWebhookQueue(store.redis, store.keys);
    const service = new BadgeService(
      store,
      systemClock,
      {},
      { offlineJobs: redisOfflineJobs(queue, ['conversations', 'notices']) },
    );
    const jobs = async () =>
      (await store.redis.xrange(queue.jobsKey, '-', '+')).map(([, fields]) => fields[1]);
    await service.replaceMembers('pair', ['a', 'b']);
    await service.ingestMessages('pair', [{ seq: 1, from: 'a' }]);
    // The platform's retry of a call whose job failed: the message is stored already.
    await service.ingestMessages('pair', [{ seq: 1, from: 'a' }]);
    await service.publishNotice(7);
    await service.publishNotice(7);
    await service.markReddot('settings');
    const conversationJob = JSON.stringify({
      kind: 'conversation',
      conversation: 'pair',
      maxSeq: 1,
      senders: ['a'],
      items: [{ kind: 'message', conversation: 'pair', seq: 1, from: 'a' }],
    });
    const noticeJob = JSON.stringify({ kind: 'notice', id: 7 });
    expect(await jobs()).toEqual([conversationJob, conversationJob, noticeJob, noticeJob]);
  });

  it('a notice reaches the offline users seen within the inactive window, as one job', async () => {
    const made = await stack();
    const { service, store, queue } = made;
    for (const user of ['n1', 'n2', 'n3']) await service.badge(user, { seen: true });
    await service.setPresence('n3', true, 60_000);
    const receiver = await file.receiver();
    await file.workers(made, receiver.url);
    const before = await store.redis.xlen(queue.jobsKey);
    await service.publishNotice(1);
    expect(await store.redis.xlen(queue.jobsKey)).toBeLessThanOrEqual(before + 1);
    await waitFor(() => receiver.deliveriesByUser().size === 2);
    const byUser = receiver.deliveriesByUser();
    expect([...byUser.keys()].sort()).toEqual(['n1', 'n2']);
    expect(byUser.get('n1')![0]!.delivery.reasons).toEqual(['notices']);
    expect(byUser.get('n1')![0]!.delivery.badge.notices).toBe(1);
  });
});
