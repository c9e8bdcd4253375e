/**
 * What the cluster store contract's files (test/contract/cluster-store-*.test.ts) share. The
 * classes the store's barrel does not export are imported from their files.
 */
import { poolOf, readChanges, type StoredBadge } from '@bubble/protocol';
import type {
  ChangeLog,
  FencedBadges,
  LogRead,
  PoolEvent,
  PresenceStore,
  RedisStore,
} from '@bubble/store';
import { LOG_START } from '@bubble/store';
import { expect } from 'vitest';
import { MemoryChangeLog } from '../../packages/store/src/change-log/memory-change-log.js';
import { MemoryFencedBadges } from '../../packages/store/src/fenced-badges/memory-fenced-badges.js';
import { MemoryPresence } from '../../packages/store/src/presence/memory-presence.js';
import { RedisChangeLog } from '../../packages/store/src/change-log/redis-change-log.js';
import { RedisFencedBadges } from '../../packages/store/src/fenced-badges/redis-fenced-badges.js';
import { RedisPresence } from '../../packages/store/src/presence/redis-presence.js';
import { TEST_POOLS, type EngineContext } from './engines.js';

/** The parts of the cluster store one engine gives a test. */
export interface Parts {
  log: ChangeLog;
  presence: PresenceStore;
  badges: FencedBadges & Pick<RedisFencedBadges, 'saveUnfenced'>;
  /** Sets the pool's current fencing token, as Coordination.nextFence would. */
  setFence(pool: number, fence: number): Promise<void>;
  storedBadge(user: string): Promise<StoredBadge | null>;
}

export interface LogCaps {
  maxPoolEvents?: number;
  maxPostEvents?: number;
}

/** The change log, presence and fenced badges of `ctx`'s engine, on its store. */
export function partsOf(ctx: EngineContext, caps: LogCaps = {}): Parts {
  if (ctx.engine === 'memory') {
    const log = new MemoryChangeLog(caps);
    const fences = new Map<number, number>();
    const states = new Map<string, StoredBadge>();
    return {
      log,
      presence: new MemoryPresence({ pools: TEST_POOLS, log }),
      badges: new MemoryFencedBadges({
        pools: TEST_POOLS,
        badges: states,
        currentFence: (pool) => fences.get(pool) ?? 0,
      }),
      setFence: async (pool, fence) => void fences.set(pool, fence),
      storedBadge: async (user) => structuredClone(states.get(user) ?? null),
    };
  }
  const store = ctx.store as RedisStore;
  const { redis: client, keys } = store;
  const log = new RedisChangeLog({ client, keys, ...caps });
  return {
    log,
    presence: new RedisPresence({ client, keys, log }),
    badges: new RedisFencedBadges({ client, keys, sharded: false }),
    setFence: async (pool, fence) => void (await client.set(keys.fence(pool), fence)),
    storedBadge: (user) => store.badges.load(user),
  };
}

/** `count` user ids of `pool`, in a stable order. */
export function usersOf(pool: number, count: number, pools = TEST_POOLS, tag = 'u'): string[] {
  const users: string[] = [];
  for (let i = 0; users.length < count; i++) {
    if (poolOf(`${tag}${i}`, pools) === pool) users.push(`${tag}${i}`);
  }
  return users;
}

/** Subscribes as each gateway; what each hears, as "user=<field's count>" strings. */
export async function listenAsGateways(badges: FencedBadges, gateways: string[], field: string) {
  const heard = new Map<string, string[]>(gateways.map((gateway) => [gateway, []]));
  const stops = await Promise.all(
    gateways.map((gateway) =>
      badges.subscribeGateway(gateway, (changes) =>
        heard
          .get(gateway)!
          .push(...readChanges(changes).map((c) => `${c.user}=${c.fields[field]}`)),
      ),
    ),
  );
  return { heard, stops };
}

/** Every event of `pool`'s change log, oldest first. */
export async function allPoolEvents(log: ChangeLog, pool: number): Promise<PoolEvent[]> {
  const read = (await log.readPoolEvents([{ pool, after: LOG_START }], 10_000)).get(pool)!;
  return read.entries.map((entry) => entry.event);
}

/** The entries of `read` have increasing stream ids. */
export function expectIncreasingIds(read: LogRead<unknown>): void {
  const ids = read.entries.map((entry) => entry.id.split('-').map(Number) as [number, number]);
  for (let i = 1; i < ids.length; i++) {
    const [ms, seq] = ids[i]!;
    const [prevMs, prevSeq] = ids[i - 1]!;
    expect(ms > prevMs || (ms === prevMs && seq > prevSeq), `${ids[i - 1]} < ${ids[i]}`).toBe(true);
  }
}

/** Lets time pass for checks that something does NOT happen within it. */
export const elapse = (ms: number): Promise<void> =>
  new Promise((resolve) => setTimeout(resolve, ms));

/** The presence events of `user`. */
export const online = (user: string): PoolEvent => ({ kind: 'online', user });
export const offline = (user: string): PoolEvent => ({ kind: 'offline', user });
