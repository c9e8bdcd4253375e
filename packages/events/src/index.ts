/**
 * The platform's events that arrive without an HTTP call (the ingest stream, seed 004) and the
 * badges that leave without a socket (offline delivery to the platform's push service).
 */
export { IngestConsumers } from './ingest/consumer.js';
export type { IngestConsumerOptions } from './ingest/consumer-options.js';
export { IngestMetrics } from './ingest/metrics.js';
export { parseIngestEntry } from './ingest/entries.js';
export * from './webhook/index.js';
