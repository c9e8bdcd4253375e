import { MemoryStore, RedisStore, type BubbleStore } from '@bubble/store';
import type { Config } from './config.js';

export function hasRedis(config: Config): boolean {
  return Boolean(config.REDIS_URL || config.REDIS_CLUSTER_NODES?.length);
}

/**
 * Redis when configured, else the embedded engine. With a sources endpoint, the store holds
 * users' follows on demand (docs/semantics.md, "Where a user's sources live").
 */
export function createStore(config: Config): BubbleStore {
  const sourcesOnDemand = config.BUBBLE_SOURCES_URL !== undefined;
  if (!hasRedis(config)) return new MemoryStore({ sourcesOnDemand });
  return new RedisStore({
    sourcesOnDemand,
    url: config.REDIS_URL,
    clusterNodes: config.REDIS_CLUSTER_NODES,
    keyPrefix: config.BUBBLE_KEY_PREFIX,
    pools: config.BUBBLE_POOLS,
    largeGroup: config.BUBBLE_LARGE_GROUP,
  });
}
