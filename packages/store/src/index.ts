export type * from './types.js';
export { keepStringPrototypeFast } from './redis/string-prototype.js';
export { LOG_START } from './cluster-types.js';
export { MemoryStore, type MemoryStoreOptions } from './memory/memory-store.js';
export { MemoryPoolLocks } from './memory/memory-pool-locks.js';
export { RedisStore, type RedisStoreOptions } from './redis/redis-store.js';
export { RedlockPoolLocks, type RedlockPoolLocksOptions } from './redis/redlock-pool-locks.js';
export { RedisKeys, KEY_PREFIX_PATTERN } from './redis/keys.js';
export {
  connectRedis,
  type ConnectOptions,
  type RedisClient,
  type RedisTarget,
} from './redis/connect.js';
export { loadScripts } from './redis/scripts.js';
export { IngestReadConnection, ReadReplyDecoder } from './redis/ingest-read-connection.js';
export {
  INGEST_GROUP,
  IngestPartition,
  ingestPartitionOf,
  readIngestBacklog,
  type ClaimedIngestEntry,
  type IngestClaim,
  type IngestEntry,
  type IngestPartitionBacklog,
} from './redis/ingest-stream.js';
export { byActivity, DEFAULT_LARGE_GROUP, DEFAULT_LIST_INDEX_SIZE } from './conversation-order.js';
export {
  StoreClock,
  type ClockListeners,
  type ClockSample,
  type StoreClockOptions,
} from './store-clock.js';
export { marksEventsByPool } from './marks-events.js';
export {
  RedisWebhookQueue,
  WEBHOOK_GROUP,
  JOB_DONE,
  type WebhookJobEntry,
  type ScheduledPage,
  type DueUser,
  type ClaimedBatch,
  type WebhookQueueStats,
  type DeadDelivery,
} from './redis/webhook-queue.js';
