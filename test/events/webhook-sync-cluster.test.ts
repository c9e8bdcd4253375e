/**
 * Devices in sync on a 3-master Redis Cluster (the scenarios of webhook-sync-support.ts): users
 * in pools on every node, the queue's {w} scripts on theirs, two delivery workers.
 */
import { BadgeService } from '@bubble/badges';
import { redisOfflineJobs } from '@bubble/events';
import { RedisStore, RedisWebhookQueue } from '@bubble/store';
import { freePort, uniquePrefix } from '@bubble/test-utils';
import { afterEach, describe, it } from 'vitest';
import { useRedisCluster } from '../support/redis-cluster.js';
import {
  everyDecreaseCorrectsPhone,
  onlineBeforeIncrease,
  readOnDesktopCorrectsPhone,
  SYNC_INTERVAL_MS,
  type SyncRig,
} from './webhook-sync-support.js';
import { startWorkers, TestReceiver } from './webhook-support.js';

describe('devices in sync [3-master Redis Cluster]', () => {
  const cluster = useRedisCluster();
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function rig(): Promise<SyncRig> {
    const store = new RedisStore({
      clusterNodes: cluster.nodes,
      keyPrefix: uniquePrefix('whs'),
      pools: 100,
    });
    await store.syncClock();
    cleanups.push(() => store.close());
    const queue = new RedisWebhookQueue(store.redis, store.keys);
    const service = new BadgeService(
      store,
      store.clock,
      {},
      { offlineJobs: redisOfflineJobs(queue, ['conversations', 'counters', 'notices']) },
    );
    const stack = { store, service, queue, close: () => store.close() };
    const receiver = await new TestReceiver(await freePort()).start();
    cleanups.push(() => receiver.stop());
    const workers = [];
    for (let i = 0; i < 2; i++) {
      const started = await startWorkers(stack, receiver.url, { minIntervalMs: SYNC_INTERVAL_MS });
      cleanups.push(() => started.close());
      workers.push(started);
    }
    return { stack, receiver, workers };
  }

  it('a read on the desktop corrects the phone; a read that changes nothing sends nothing', async () => {
    await readOnDesktopCorrectsPhone(await rig(), 'c-');
  }, 30_000);

  it('every source that lowers a total corrects the phone of a user online elsewhere', async () => {
    await everyDecreaseCorrectsPhone(await rig(), 'c-');
  }, 30_000);

  it('a user online before a due increase gets none, and still gets a decrease’s correction', async () => {
    await onlineBeforeIncrease(await rig(), 'c-');
  }, 30_000);
});
