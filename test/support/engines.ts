/**
 * Runs one suite against both storage engines.
 *
 *   describeEachEngine('store contract', (ctx) => {
 *     it('…', async () => { const { store } = ctx(); … });
 *   });
 *
 * The Redis case starts ONE real redis-server per test file (per describeEachEngine call) and
 * gives every test a fresh RedisStore under its own key prefix; the memory case gives a fresh
 * MemoryStore. Stores are closed after each test.
 */
import { ManualClock } from '@bubble/protocol';
import { BadgeService, type BadgeRules } from '@bubble/badges';
import { MemoryStore, RedisStore, type BubbleStore } from '@bubble/store';
import { startRedisServer, uniquePrefix, type RedisServerHandle } from '@bubble/test-utils';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, beforeEach, describe } from 'vitest';

export type EngineName = 'memory' | 'redis';

export const ENGINES: readonly EngineName[] = ['memory', 'redis'];

/** Pools of every store the helper makes, on both engines (the production default). */
export const TEST_POOLS = 100;

/** A start time far from 0 so "now − 7 days" is an ordinary positive timestamp. */
export const T0 = Date.UTC(2024, 0, 15, 12, 0, 0);

export interface EngineContext {
  engine: EngineName;
  /** The fresh store of the current test (own connection for Redis). */
  store: BubbleStore;
  /** The Redis key prefix of `store` (undefined for memory). */
  prefix: string | undefined;
  /** URL of this file's redis-server (undefined for memory). */
  redisUrl: string | undefined;
  /** A raw client on this file's redis-server, for inspecting keys (undefined for memory). */
  admin: Redis | undefined;
  /**
   * Another fresh, empty store (fresh prefix). For Redis it shares one client per test, so it
   * is cheap enough to make one per property run; closing it is optional (the helper does).
   */
  freshStore(): BubbleStore;
}

/**
 * Declares `describe(`${name} [${engine}]`)` once per engine (or only `engines`), with the
 * lifecycle above. `body` receives a getter: call it inside a test or hook, not at declaration.
 */
export function describeEachEngine(
  name: string,
  body: (ctx: () => EngineContext, engine: EngineName) => void,
  engines: readonly EngineName[] = ENGINES,
): void {
  for (const engine of engines) {
    describe(`${name} [${engine}]`, () => {
      let server: RedisServerHandle | undefined;
      let admin: Redis | undefined;
      let shared: Redis | undefined;
      let current: EngineContext | undefined;
      const extra: BubbleStore[] = [];

      if (engine === 'redis') {
        beforeAll(async () => {
          server = await startRedisServer();
          admin = new Redis(server.url, { maxRetriesPerRequest: 2 });
        });
        afterAll(async () => {
          admin?.disconnect();
          admin = undefined;
          await server?.stop();
          server = undefined;
        });
      }

      beforeEach(() => {
        if (engine === 'memory') {
          current = {
            engine,
            store: new MemoryStore({ pools: TEST_POOLS }),
            prefix: undefined,
            redisUrl: undefined,
            admin: undefined,
            freshStore: () => new MemoryStore({ pools: TEST_POOLS }),
          };
          return;
        }
        if (!server || !admin) throw new Error('redis-server did not start');
        const url = server.url;
        const prefix = uniquePrefix();
        current = {
          engine,
          store: new RedisStore({ url, keyPrefix: prefix, pools: TEST_POOLS }),
          prefix,
          redisUrl: url,
          admin,
          freshStore: () => {
            shared ??= new Redis(url, { enableAutoPipelining: true, maxRetriesPerRequest: 2 });
            const store = new RedisStore({
              client: shared,
              keyPrefix: uniquePrefix(),
              pools: TEST_POOLS,
            });
            extra.push(store);
            return store;
          },
        };
      });

      afterEach(async () => {
        const closing = [current?.store, ...extra.splice(0)];
        current = undefined;
        await Promise.all(closing.flatMap((store) => (store ? [store.close()] : [])));
        if (shared) {
          const client = shared;
          shared = undefined;
          await client.quit().catch(() => client.disconnect());
        }
      });

      body(() => {
        if (!current) throw new Error('the engine context is only available inside a test');
        return current;
      }, engine);
    });
  }
}

/** A BadgeService on `store` whose clock only moves when the test moves it. */
export function manualService(
  store: BubbleStore,
  options: { start?: number; rules?: Partial<BadgeRules> } = {},
): { service: BadgeService; clock: ManualClock } {
  const clock = new ManualClock(options.start ?? T0);
  return { service: new BadgeService(store, clock, options.rules), clock };
}

/** Every key of a Redis database matching `pattern`, through SCAN (never KEYS). */
export async function scanKeys(client: Redis, pattern = '*'): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await client.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== '0');
  return keys;
}
