import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import {
  connectRedis,
  MemoryPoolLocks,
  RedlockPoolLocks,
  RedisKeys,
  RedisStore,
  type BubbleStore,
  type PoolLocks,
} from '@bubble/store';
import { SourcesClient } from '@bubble/events';
import type { GatewayMetrics } from '@bubble/gateway';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { createStore } from '../store-factory.js';
import { quorumAnswers } from './wait-for-store.js';

export function nodeId(role: string): string {
  return `${role}-${hostname()}-${process.pid}-${randomBytes(2).toString('hex')}`;
}

export interface LockRuntime {
  locks: PoolLocks;
  /** The lock quorum's own masters (BUBBLE_LOCK_REDIS_URLS), when it is not the main Redis. */
  quorumClients: Redis[];
  /** Resolves when the locks can be granted (a majority of the quorum answers); else throws. */
  reachable(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Pool locks: in-process for the memory engine; Redlock over BUBBLE_LOCK_REDIS_URLS (a quorum
 * of independent masters), else over the main Redis.
 */
export function createLocks(config: Config, store: BubbleStore, logger: Logger): LockRuntime {
  if (!(store instanceof RedisStore)) {
    const locks = new MemoryPoolLocks();
    return { locks, quorumClients: [], reachable: async () => {}, close: () => locks.close() };
  }
  const urls = config.BUBBLE_LOCK_REDIS_URLS ?? (config.REDIS_URL ? [config.REDIS_URL] : []);
  const keys = new RedisKeys(config.BUBBLE_KEY_PREFIX, config.BUBBLE_POOLS);
  if (urls.length === 0) {
    // Redis Cluster without a separate quorum: a cluster client of the locks' own routes each
    // lock key itself. Not the store's: its auto-pipelined batches would delay an extension
    // behind a sweep's, and after a failover hand it MOVED until the slot map is reread, which
    // under load outlasted short leases.
    const lockClient = connectRedis(
      { clusterNodes: config.REDIS_CLUSTER_NODES },
      'bubble-lock',
      () => {},
      { autoPipelining: false },
    );
    const locks = new RedlockPoolLocks({
      clients: [lockClient as unknown as Redis],
      keys,
      logger: logger.child({ module: 'pool-locks' }),
    });
    // The store's own ping covers the cluster these locks live on.
    return {
      locks,
      quorumClients: [],
      reachable: async () => {},
      async close() {
        await locks.close();
        lockClient.disconnect();
      },
    };
  }
  const clients = urls.map((url) => {
    const client = new Redis(url, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      connectionName: 'bubble-lock',
      // A master that stepped down votes against (no offline queue to resend into) and the
      // reconnect reaches whatever serves the address now.
      reconnectOnError: (err) => err.message.startsWith('READONLY'),
    });
    // Without a listener ioredis prints every failed reconnect; the lock calls see the failures.
    client.on('error', () => {});
    return client;
  });
  const locks = new RedlockPoolLocks({
    clients,
    keys,
    logger: logger.child({ module: 'pool-locks' }),
  });
  return {
    locks,
    quorumClients: config.BUBBLE_LOCK_REDIS_URLS ? clients : [],
    reachable: () => quorumAnswers(clients),
    async close() {
      await locks.close();
      for (const client of clients) client.disconnect();
    },
  };
}

export { createStore };

/** The platform's sources endpoint's client (BUBBLE_SOURCES_URL), on the process's registry. */
export function sourcesClient(
  config: Config,
  registry: GatewayMetrics['registry'],
  logger: Logger,
): SourcesClient | undefined {
  const url = config.BUBBLE_SOURCES_URL;
  const secret = config.BUBBLE_SOURCES_SECRET;
  if (url === undefined || secret === undefined) return undefined;
  return new SourcesClient({
    url,
    secret,
    timeoutMs: config.BUBBLE_SOURCES_TIMEOUT_MS,
    concurrency: config.BUBBLE_SOURCES_CONCURRENCY,
    caps: { follows: config.BUBBLE_FOLLOW_CAP, topics: config.BUBBLE_TOPIC_CAP },
    registry,
    log: logger.child({ module: 'sources' }),
  });
}

/**
 * Converts follow sets stored as one Redis SET per user (before issue 36 of 2026-12-07) to the compact
 * lists this version reads, in the background, in batches: a server does it at start
 * (docs/versioning.md). Every step is idempotent, so several servers may run it at once.
 */
export function convertLegacyFollows(store: RedisStore, logger: Logger): () => Promise<void> {
  let stopped = false;
  const run = (async () => {
    let converted = 0;
    try {
      for (;;) {
        if (stopped) return;
        const step = await store.convertLegacyFollows(500);
        converted += step.converted;
        if (step.done) break;
      }
      if (converted > 0) logger.info({ converted }, 'legacy follow sets converted');
    } catch (err) {
      logger.warn(
        { err, converted },
        'could not convert the legacy follow sets; the next start resumes',
      );
    }
  })();
  return async () => {
    stopped = true;
    await run;
  };
}
