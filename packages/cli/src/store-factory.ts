import { MemoryStore, RedisStore, type BubbleStore } from '@bubble/store';
import type { Config } from './config.js';

export function hasRedis(config: Config): boolean {
  return Boolean(config.REDIS_URL || config.REDIS_CLUSTER_NODES?.length);
}

/** Redis when configured, else the embedded engine. */
export function createStore(config: Config): BubbleStore {
  if (!hasRedis(config)) return new MemoryStore();
  return new RedisStore({
    url: config.REDIS_URL,
    clusterNodes: config.REDIS_CLUSTER_NODES,
    keyPrefix: config.BUBBLE_KEY_PREFIX,
    pools: config.BUBBLE_POOLS,
    largeGroup: config.BUBBLE_LARGE_GROUP,
  });
}
