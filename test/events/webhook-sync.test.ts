/**
 * Devices in sync (docs/api.md): what bubble delivered to a user's phone is corrected when their
 * total goes down anywhere, even with their desktop live; nothing is sent when nothing changed;
 * entries are ordered by seq under retries. One redis-server, two delivery workers (two
 * gateways' senders), the real local receiver.
 */
import type { WebhookItem } from '@bubble/store';
import { describe, expect, it } from 'vitest';
import {
  everyDecreaseCorrectsPhone,
  onlineBeforeIncrease,
  orderUnderRetries,
  readOnDesktopCorrectsPhone,
  SYNC_INTERVAL_MS,
  type SyncRig,
} from './webhook-sync-support.js';
import { webhookTestFile } from './webhook-support.js';

const file = webhookTestFile();

async function rig(): Promise<SyncRig> {
  const stack = await file.stack(['conversations', 'counters', 'notices']);
  const receiver = await file.receiver();
  const options = { minIntervalMs: SYNC_INTERVAL_MS };
  const workers = [
    await file.workers(stack, receiver.url, options),
    await file.workers(stack, receiver.url, options),
  ];
  return { stack, receiver, workers };
}

describe('devices in sync', () => {
  it('a read on the desktop corrects the phone within the interval; a read that changes nothing sends nothing', async () => {
    await readOnDesktopCorrectsPhone(await rig(), 's-');
  });

  it('every source that lowers a total corrects the phone of a user online elsewhere', async () => {
    await everyDecreaseCorrectsPhone(await rig(), 's-');
  });

  it('a user online before a due increase gets none, and still gets the correction of a decrease', async () => {
    await onlineBeforeIncrease(await rig(), 's-');
  });

  it('the due set keeps a user’s newest 10 items, and forgets them once their batch is stored', async () => {
    const { queue } = await file.stack();
    const item = (seq: number): WebhookItem => ({
      kind: 'message',
      conversation: 'c',
      seq,
      from: 'bob',
      preview: { text: `m${seq}` },
    });
    const page = (seqs: number[], now: number) => ({
      now,
      intervalMs: 0,
      bound: 100,
      consumer: 'c',
      job: '',
      nextCursor: '',
      users: ['ann'],
      reason: 'conversations',
      items: seqs.map(item),
    });
    await queue.schedule(page([1, 2, 3], 1_000));
    await queue.schedule(page([4, 5, 6, 7, 8, 9, 10, 11], 1_001));
    const [due] = await queue.takeDue(2_000, 9_000, 10, 0);
    expect(due!.items.map((i) => (i.kind === 'message' ? i.seq : 0))).toEqual([
      2, 3, 4, 5, 6, 7, 8, 9, 10, 11,
    ]);
    await queue.storeBatch({
      id: 'b1',
      body: '{}',
      leaseUntil: 9_000,
      now: 2_000,
      sent: [{ user: 'ann', total: 10, seq: 2_000 }],
      left: [],
    });
    await queue.finishBatch('b1', 2_100, 0, ['ann']);
    await queue.schedule({ ...page([], 3_000), items: undefined });
    const [next] = await queue.takeDue(3_000, 9_000, 10, 0);
    expect(next).toMatchObject({ items: [], shown: { total: 10, seq: 2_000 } });
  });

  it('keeps the order of a user’s entries (seq) under retries', async () => {
    await orderUnderRetries(await rig(), 's-');
  });
});
