import { Cluster } from 'ioredis';
import type { RedisClient } from './connect.js';

/**
 * How a call over the keys of many users, authors or conversations goes out, chosen once per
 * client: on a Redis Cluster the keys live in many slots, so one call per item, which ioredis
 * auto-pipelines into one write per node; one server holds every key, so a script call per
 * chunk of items, a bounded step for the server.
 */
export interface SlotSpread {
  /** True on a Redis Cluster: keys of different items are in different slots. */
  readonly sharded: boolean;
  /**
   * `perItem` of each item (Cluster) or `perChunk` of each `chunkSize` items (one server),
   * their answers in input order: perChunk answers one value per item of its chunk, or what
   * the caller reduces (a count of the chunk).
   */
  map<T, R>(
    items: readonly T[],
    chunkSize: number,
    perItem: (item: T) => Promise<R>,
    perChunk: (chunk: T[]) => Promise<R[]>,
  ): Promise<R[]>;
}

const CLUSTER: SlotSpread = {
  sharded: true,
  map: (items, _chunkSize, perItem) => Promise.all(items.map(perItem)),
};

const ONE_SERVER: SlotSpread = {
  sharded: false,
  async map(items, chunkSize, _perItem, perChunk) {
    const chunks = [];
    for (let i = 0; i < items.length; i += chunkSize) {
      chunks.push(perChunk(items.slice(i, i + chunkSize)));
    }
    return (await Promise.all(chunks)).flat();
  },
};

/** The one place the store tells a Cluster from one server. */
export function slotSpreadOf(client: RedisClient): SlotSpread {
  return client instanceof Cluster ? CLUSTER : ONE_SERVER;
}
