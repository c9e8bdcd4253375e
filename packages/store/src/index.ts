export type * from './types.js';
export type { UserSources } from './follows/user-sources.js';
export type { LegacyConversionStep } from './follows/legacy-follows.js';
export { RECORDED_UNFOLLOWS_LIMIT } from './follows/follow-graph.js';
export { keepStringPrototypeFast } from './redis/string-prototype.js';
export { LOG_START } from './change-log/change-log.js';
export { MemoryStore, type MemoryStoreOptions } from './bubble-store/memory-store.js';
export { MemoryPoolLocks } from './pool-locks/memory-pool-locks.js';
export { RedisStore, type RedisStoreOptions } from './bubble-store/redis-store.js';
export { RedlockPoolLocks, type RedlockPoolLocksOptions } from './pool-locks/redlock-pool-locks.js';
export { RedisKeys, KEY_PREFIX_PATTERN } from './redis/keys.js';
export {
  connectRedis,
  type ConnectOptions,
  type RedisClient,
  type RedisTarget,
} from './redis/connect.js';
export { loadScripts } from './redis/scripts.js';
export { compareStreamIds, isStreamId, streamIdMs } from './stream-id.js';
export { IngestReadConnection } from './ingest-stream/ingest-read-connection.js';
export { ReadReplyDecoder } from './ingest-stream/read-reply-decoder.js';
export {
  INGEST_GROUP,
  IngestPartition,
  ingestPartitionOf,
  readIngestBacklog,
  type ClaimedIngestEntry,
  type IngestClaim,
  type IngestEntry,
  type IngestPartitionBacklog,
} from './ingest-stream/ingest-stream.js';
export {
  DEAD_LETTER_FIELDS,
  replayDeadLetter,
  type ReplayOutcome,
} from './ingest-stream/dead-letters.js';
export { byActivity, DEFAULT_LARGE_GROUP } from './conversations/conversation-order.js';
export {
  StoreClock,
  type ClockListeners,
  type ClockSample,
  type StoreClockOptions,
} from './store-clock.js';
export { marksEventsByPool } from './marks/marks-events.js';
export { RedisWebhookQueue } from './webhook-queue/redis-webhook-queue.js';
export {
  WEBHOOK_GROUP,
  JOB_DONE,
  MAX_WEBHOOK_ITEMS,
  type WebhookItem,
  type ShownBadge,
  type SentBadge,
  type WebhookJobEntry,
  type ScheduledPage,
  type DueUser,
  type ClaimedBatch,
  type WebhookQueueStats,
  type DeadDelivery,
} from './webhook-queue/webhook-queue.js';
