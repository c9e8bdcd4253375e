/**
 * The platform's events that arrive without an HTTP call (the ingest stream, seed 004) and the
 * badges that leave without a socket (offline delivery to the platform's push service).
 */
export * from './webhook/index.js';
