/**
 * The platform's events that arrive without an HTTP call (the ingest stream, seed 004), the
 * badges that leave without a socket (offline delivery to the platform's push service), and the
 * client of the platform's sources endpoint (the follows of users bubble does not hold).
 */
export { IngestConsumers } from './ingest/consumer.js';
export type { IngestConsumerOptions } from './ingest/consumer-options.js';
export { IngestMetrics } from './ingest/metrics.js';
export { parseIngestEntry } from './ingest/entries.js';
export * from './webhook/index.js';
export * from './digest/index.js';
export * from './sources/index.js';
