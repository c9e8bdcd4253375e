/**
 * Devices in sync (docs/api.md): what bubble delivered to a user's phone is corrected when their
 * total goes down anywhere, even with their desktop live; nothing is sent when nothing changed;
 * entries are ordered by seq under retries. One redis-server, two delivery workers (two
 * gateways' senders), the real local receiver.
 */
import { describe, it } from 'vitest';
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

  it('keeps the order of a user’s entries (seq) under retries', async () => {
    await orderUnderRetries(await rig(), 's-');
  });
});
