/**
 * A 3-master Redis Cluster for the calling describe block: started before its tests and
 * stopped after them, with one ioredis Cluster client on it (made on first use, quit first).
 */
import { startRedisCluster, type RedisClusterHandle } from '@bubble/test-utils';
import { Cluster } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';

export interface ClusterRig {
  readonly handle: RedisClusterHandle;
  /** host:port of every master, as RedisStore's `clusterNodes` takes them. */
  readonly nodes: string[];
  /** One client on the cluster, with auto-pipelining. */
  readonly client: Cluster;
}

export function useRedisCluster(): ClusterRig {
  let handle: RedisClusterHandle | undefined;
  let client: Cluster | undefined;
  beforeAll(async () => {
    handle = await startRedisCluster({ masters: 3 });
  }, 60_000);
  afterAll(async () => {
    await client?.quit().catch(() => client?.disconnect());
    await handle?.stop();
  });
  const started = (): RedisClusterHandle => {
    if (!handle) throw new Error('the Redis Cluster is not started yet');
    return handle;
  };
  return {
    get handle() {
      return started();
    },
    get nodes() {
      return started().nodes.map((node) => `${node.host}:${node.port}`);
    },
    get client() {
      client ??= new Cluster(started().nodes, { enableAutoPipelining: true });
      return client;
    },
  };
}
