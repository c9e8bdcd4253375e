export { benchCompute, COMPUTE_DEFAULTS, type ComputeOptions } from './compute.js';
export { benchColdStart, COLD_START_DEFAULTS, type ColdStartOptions } from './cold-start.js';
export { benchConnections, CONNECTIONS_DEFAULTS, type ConnectionsOptions } from './connections.js';
export { benchDigest, DIGEST_DEFAULTS, type DigestOptions } from './digest.js';
export { benchFanout, FANOUT_DEFAULTS, type FanoutOptions } from './fanout.js';
export { benchIngest, INGEST_DEFAULTS, type IngestOptions } from './ingest.js';
export {
  benchIngestStream,
  INGEST_STREAM_DEFAULTS,
  type IngestStreamOptions,
} from './ingest-stream.js';
export { benchMemory, MEMORY_DEFAULTS, type MemoryOptions } from './memory.js';
export { benchRehydrate, type RehydrateOptions } from './rehydrate.js';
export { REHYDRATE_COLD_DEFAULTS, type RehydrateColdOptions } from './rehydrate-cold.js';
export { REHYDRATE_REFILL_DEFAULTS, type RehydrateRefillOptions } from './rehydrate-refill.js';
export { benchLatency, benchLatencyModerate } from './latency.js';
export {
  LATENCY_DEFAULTS,
  LATENCY_MODERATE_DEFAULTS,
  type LatencyOptions,
} from './latency-options.js';
export { benchPushPeers, PUSH_PEERS_DEFAULTS, type PushPeersOptions } from './push-peers.js';
export { benchPoll, POLL_DEFAULTS, type PollOptions } from './poll.js';
export { benchScale, SCALE_DEFAULTS, type ScaleOptions } from './scale.js';
export { benchWebhook, WEBHOOK_DEFAULTS, type WebhookOptions } from './webhook.js';
export { benchSync, SYNC_DEFAULTS, type SyncOptions } from './sync.js';
export { benchSweep, SWEEP_DEFAULTS, type SweepOptions } from './sweep.js';
export { benchWsCeiling, WS_CEILING_DEFAULTS, type WsCeilingOptions } from './ws-ceiling.js';
export { buildWorkload, postBatch, ZipfSampler, percentile } from './workload.js';
export {
  benchConversations,
  CONVERSATIONS_DEFAULTS,
  type ConversationsOptions,
} from './conversations.js';
export {
  benchMassOffline,
  MASS_OFFLINE_DEFAULTS,
  type MassOfflineOptions,
} from './mass-offline.js';
export { SdkFleet, histogramQuantile, perSecond } from './sdk-fleet.js';
export { processRssBytes } from './children.js';
export { benchSoak, SOAK_DEFAULTS, type SoakOptions } from './soak.js';
export { benchStorm, STORM_DEFAULTS, type StormFigures, type StormOptions } from './storm.js';
