export { SourcesClient } from './sources-client.js';
export {
  MAX_SOURCES_BATCH,
  type SourcesClientOptions,
  type SourcesLog,
} from './sources-client-options.js';
export type { BreakerSettings } from './circuit-breaker.js';
export {
  checkSourcesEntry,
  parseSourcesBody,
  type SourcesBody,
  type SourcesCaps,
  type SourcesEntryCheck,
} from './sources-answer.js';
export {
  SourcesMetrics,
  type SourcesClientStats,
  type SourcesRequestLabel,
  type SourcesUserLabel,
} from './sources-metrics.js';
