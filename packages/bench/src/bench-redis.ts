import { BadgeService } from '@bubble/badges';
import { systemClock } from '@bubble/protocol';
import { RedisStore } from '@bubble/store';
import { startRedisServer } from '@bubble/test-utils';
import { Redis } from 'ioredis';
import { KEY_PREFIX } from './live-stack.js';

/** A scenario's own redis-server, with the store and badge service it is seeded through. */
export interface BenchRedis {
  url: string;
  store: RedisStore;
  service: BadgeService;
  /**
   * A plain client for the scenario's own reads (reports, INFO, MEMORY USAGE). Opened on first
   * use, so a scenario that only drives the gateway adds no client to its server.
   */
  readonly admin: Redis;
  /** Closes the clients, then the server. */
  stop(): Promise<void>;
}

/**
 * `followCap` is the badge rules' own (2,000) when not given; `sourcesOnDemand` builds the store
 * as a role does with BUBBLE_SOURCES_URL set (the lifecycle job then drops follows too).
 */
export async function startBenchRedis(options: {
  pools: number;
  followCap?: number;
  sourcesOnDemand?: boolean;
}): Promise<BenchRedis> {
  const server = await startRedisServer();
  const store = new RedisStore({
    url: server.url,
    keyPrefix: KEY_PREFIX,
    pools: options.pools,
    sourcesOnDemand: options.sourcesOnDemand ?? false,
  });
  const rules = options.followCap === undefined ? {} : { followCap: options.followCap };
  const service = new BadgeService(store, systemClock, rules);
  let admin: Redis | undefined;
  return {
    url: server.url,
    store,
    service,
    get admin() {
      return (admin ??= new Redis(server.url));
    },
    async stop() {
      await store.close().catch(() => {});
      admin?.disconnect();
      await server.stop();
    },
  };
}
