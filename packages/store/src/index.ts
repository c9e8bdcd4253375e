export type * from './types.js';
export { LOG_START } from './cluster-types.js';
export { MemoryStore } from './memory/memory-store.js';
export { RedisStore, type RedisStoreOptions } from './redis/redis-store.js';
export { RedisKeys, KEY_PREFIX_PATTERN } from './redis/keys.js';
export { connectRedis, type RedisClient, type RedisTarget } from './redis/connect.js';
export { loadScripts } from './redis/scripts.js';
export { newEpoch } from './epoch.js';
