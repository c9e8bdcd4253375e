import type { BadgeService } from '@bubble/badges';
import type { RedisClient, RedisKeys } from '@bubble/store';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';

export interface IngestConsumerOptions {
  /** The process's client: each partition's loop reads on a duplicate of it. */
  redis: RedisClient;
  keys: RedisKeys;
  service: BadgeService;
  /** This consumer's name in the group (the gateway id). */
  consumer: string;
  partitions: number;
  /** BUBBLE_INGEST_CLAIM_MS: an entry idle this long in any consumer is claimed. */
  claimMs: number;
  /** BUBBLE_INGEST_MAX_DELIVERIES */
  maxDeliveries: number;
  /** BUBBLE_INGEST_BLOCK_MS */
  blockMs: number;
  logger: Logger;
  registry?: Registry;
  /** Entries one read takes; default 1000. */
  count?: number;
  /** A read this long past blockMs is abandoned; default 5 s. */
  stallGraceMs?: number;
  /** Between trims of the acknowledged head; default 1 s. */
  trimEveryMs?: number;
  /** Between refreshes of the backlog gauges; default 2 s. */
  backlogEveryMs?: number;
  /** Consumers with nothing pending idle this long are deleted; default 10 min. */
  forgetConsumersAfterMs?: number;
  /**
   * Read through ioredis with the reply packed by a script even on a standalone Redis (the
   * way a Cluster reads); for tests of that path. Default false.
   */
  packedReads?: boolean;
}
