/**
 * Failover of the store (issue 16, item 5), with a server, two cores and a gateway with SDK
 * sockets open, while posts flow; the roles' lock quorum is the store itself, as they build it
 * without BUBBLE_LOCK_REDIS_URLS.
 *
 * - Redis Cluster, three masters with one replica each: the shard holding most pools has its
 *   replica promoted with CLUSTER FAILOVER (its master steps down: what was sent there meets
 *   MOVED); once the old master replicates the new one, the busiest shard's master is killed
 *   with SIGKILL (its replica takes over after cluster-node-timeout).
 * - One master and its replica behind one address, as a managed Redis's primary endpoint:
 *   FAILOVER swaps their roles and the address moves (the connections already open to the old
 *   master now get READONLY); then, once the old master caught up as a replica, the new master
 *   is killed with SIGKILL and the old one promoted back.
 *
 * After each fault every pool is owned again (after CLUSTER FAILOVER, which loses nothing, no
 * pool is even dropped: lock extensions and commands follow the promotion); throughout, no core's write is accepted under a
 * token older than one already accepted for its pool (the published writes' tokens, in the order
 * Redis sent them); within 30 s of the last fault every online user's stored badge, every user's served
 * badge and every socket's last pushed badge equal the brute-force definition
 * (test/support/feed-definition.ts).
 */
import { startRedisCluster, startRedisServer, waitFor } from '@bubble/test-utils';
import { Cluster as RedisCluster, Redis } from 'ioredis';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildOnce } from '../support/build.js';
import { FailoverRun, survivesFaults } from './failover-run.js';
import { PrimaryEndpoint, adminCall, caughtUp } from './primary-endpoint.js';

describe('cluster: failover of the store', () => {
  let run: FailoverRun | undefined;
  const stops: Array<() => Promise<void>> = [];

  beforeAll(() => buildOnce(), 300_000);
  afterEach(async () => {
    await run?.close();
    run = undefined;
    for (const stop of stops.splice(0).reverse()) await stop();
  });

  it('Redis Cluster: CLUSTER FAILOVER, then kill -9 of a master, while posts flow: pools owned again, no stale write accepted, badges exact within 30 s', async (ctx) => {
    const seed = Number(process.env.CLUSTER_SEED ?? Date.now() % 1_000_000);
    const redis = await startRedisCluster({ masters: 3, replicas: 1 });
    stops.push(() => redis.stop());
    const admin = new RedisCluster(
      redis.nodes.map(({ host, port }) => ({ host, port })),
      {
        retryDelayOnFailover: 200,
        slotsRefreshInterval: 1000,
        redisOptions: { commandTimeout: 3000 },
      },
    );
    admin.on('error', () => {});
    const r = (run = new FailoverRun({
      env: { REDIS_CLUSTER_NODES: redis.nodes.map((n) => `${n.host}:${n.port}`).join(',') },
      admin,
      async subscribe(channels, onMessage) {
        const subscriber = admin.duplicate([], { shardedSubscribers: true });
        subscriber.on('error', () => {});
        subscriber.on('smessage', onMessage);
        await Promise.all(channels.map((channel) => subscriber.ssubscribe(channel)));
        return () => subscriber.disconnect();
      },
    }));
    ctx.onTestFailed(() => console.error(`seed ${seed}\n${r.describe()}`));
    let first: Awaited<ReturnType<FailoverRun['busiestShard']>> | undefined;
    const summary = await survivesFaults(r, seed, () => [
      {
        name: 'CLUSTER FAILOVER',
        losesNothing: true,
        async inject() {
          first = await r.busiestShard(redis);
          const at = Date.now();
          expect(await adminCall(first.replica, 'CLUSTER', 'FAILOVER')).toBe('OK');
          await r.waitPromoted(redis, first.replica, 15_000);
          return `a shard of ${first.pools} pools, replica promoted in ${Date.now() - at} ms`;
        },
      },
      {
        name: 'kill -9 of a master',
        async inject() {
          // The busiest shard again, once its old master replicates the promoted one.
          await waitFor(
            async () =>
              /master_link_status:up/.test(
                String(await adminCall(first!.master, 'INFO', 'replication')),
              ),
            { timeoutMs: 15_000, message: 'the old master never resynced as a replica' },
          );
          const second = await r.busiestShard(redis);
          const at = Date.now();
          second.master.kill('SIGKILL');
          await r.waitPromoted(redis, second.replica, 20_000);
          return `a shard of ${second.pools} pools, replica promoted in ${Date.now() - at} ms`;
        },
      },
    ]);
    console.log(`[store failover, cluster] ${summary}`);
    await ctx.annotate(summary);
  }, 240_000);

  it('one primary endpoint: FAILOVER and the address moved (READONLY on open connections), then kill -9 of the new master: pools owned again, no stale write accepted, badges exact within 30 s', async (ctx) => {
    const seed = Number(process.env.CLUSTER_SEED ?? Date.now() % 1_000_000);
    const first = await startRedisServer();
    stops.push(() => first.stop());
    const second = await startRedisServer({
      args: ['--replicaof', '127.0.0.1', String(first.port)],
    });
    stops.push(() => second.stop());
    const endpoint = await PrimaryEndpoint.start(first.port);
    stops.push(() => endpoint.close());
    await waitFor(
      async () =>
        /master_link_status:up/.test(String(await adminCall(second, 'INFO', 'replication'))),
      {
        timeoutMs: 10_000,
        message: 'the replica never synced',
      },
    );
    const admin = new Redis(endpoint.url, { maxRetriesPerRequest: 1, reconnectOnError: () => 2 });
    admin.on('error', () => {});
    const r = (run = new FailoverRun({
      env: { REDIS_URL: endpoint.url },
      admin,
      async subscribe(channels, onMessage) {
        // On the replica: the masters' PUBLISHes reach it through replication either way.
        const subscriber = new Redis(endpoint.url);
        subscriber.on('error', () => {});
        subscriber.on('message', onMessage);
        await subscriber.subscribe(...channels);
        return () => subscriber.disconnect();
      },
    }));
    ctx.onTestFailed(() => console.error(`seed ${seed}\n${r.describe()}`));
    const summary = await survivesFaults(r, seed, () => [
      {
        name: 'FAILOVER behind the endpoint',
        async inject() {
          // What a managed Redis does: FAILOVER pauses writes, lets the replica catch up, swaps
          // the roles; then the address moves. Connections open to the old master stay there.
          expect(await adminCall(first, 'FAILOVER')).toBe('OK');
          await waitFor(
            async () => /role:master/.test(String(await adminCall(second, 'INFO', 'replication'))),
            { timeoutMs: 15_000, message: 'FAILOVER never promoted the replica' },
          );
          endpoint.moveTo(second.port);
          return 'the old master now its replica';
        },
      },
      {
        name: 'kill -9 of the master behind the endpoint',
        async inject() {
          await caughtUp(first, second);
          second.kill('SIGKILL');
          await adminCall(first, 'REPLICAOF', 'NO', 'ONE');
          endpoint.moveTo(first.port);
          return 'its replica promoted';
        },
      },
    ]);
    console.log(`[store failover, endpoint] ${summary}`);
    await ctx.annotate(summary);
  }, 240_000);
});
