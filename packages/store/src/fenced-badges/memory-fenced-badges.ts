import {
  poolOf,
  idRecord,
  type BadgeChange,
  type BadgeChangeReader,
  type BadgeFields,
  type StoredBadge,
  ChangeList,
  sameCounts,
  newEpoch,
} from '@bubble/protocol';
import type {
  FencedBadges,
  FencedBadgeWrite,
  FencedSaveOptions,
  FencedSaveResult,
} from './fenced-badges.js';
import type { BadgeStamp } from '../badges/badge-states.js';

export interface MemoryFencedBadgesOptions {
  pools: number;
  /** user → badge state, the very map the engine's BadgeStates reads and writes. */
  badges: Map<string, StoredBadge>;
  /**
   * The pool's current fencing token (0 before the first: every fenced write is then refused).
   * Synchronous, so that checking it and writing happen in one step, as in the Redis script.
   */
  currentFence: (pool: number) => number;
  /**
   * Called on a write under a token newer than the current one, as saveBadges-8.lua deletes the
   * fence key then: until the next token (larger than `seen`) is taken, nothing is accepted.
   */
  retireFence?: (pool: number, seen: number) => void;
  /** The store's clock, which route expiries are set and checked on; default Date.now. */
  now?: () => number;
}

type ChangeHandler = (pool: number, changes: BadgeChange[]) => void;

/** Fenced badge writes of this process; changes are published to in-process subscribers. */
export class MemoryFencedBadges implements FencedBadges {
  private readonly pools: number;
  private readonly badges: Map<string, StoredBadge>;
  private readonly currentFence: (pool: number) => number;
  private readonly retireFence: (pool: number, seen: number) => void;
  private readonly now: () => number;
  private readonly staleWrites = new Map<number, number>();
  private readonly handlers = new Map<number, Set<ChangeHandler>>();
  /** user → gateway → route expiry */
  private readonly routes = new Map<string, Map<string, number>>();
  private readonly gatewayHandlers = new Map<string, Set<(changes: BadgeChangeReader) => void>>();
  private readonly listHandlers = new Map<string, Set<(users: string[]) => void>>();

  constructor(options: MemoryFencedBadgesOptions) {
    if (!Number.isInteger(options.pools) || options.pools < 1) {
      throw new RangeError('pools must be a positive integer');
    }
    this.pools = options.pools;
    this.badges = options.badges;
    this.currentFence = options.currentFence;
    this.retireFence = options.retireFence ?? (() => {});
    this.now = options.now ?? Date.now;
  }

  async saveFenced(
    pool: number,
    fence: number,
    writes: readonly FencedBadgeWrite[],
    computedAt: number,
    options: FencedSaveOptions = {},
  ): Promise<FencedSaveResult> {
    const { stamps, ...result } = this.save(pool, fence, writes, computedAt);
    // The same result as the Redis engine's: stamps only when asked for.
    return options.stamps && result.accepted ? { ...result, stamps } : result;
  }

  /** One user's state from a cold start: no lease, so no fence. */
  async saveUnfenced(user: string, fields: BadgeFields, computedAt: number): Promise<BadgeStamp> {
    const { stamps } = this.save(poolOf(user, this.pools), null, [{ user, fields }], computedAt);
    return stamps[0]!;
  }

  private save(
    pool: number,
    fence: number | null,
    writes: readonly FencedBadgeWrite[],
    computedAt: number,
  ): Required<FencedSaveResult> {
    checkPool(writes, pool, this.pools);
    const current = fence === null ? 0 : this.currentFence(pool);
    if (fence !== null && !isCurrentFence(fence, current)) {
      if (current !== 0 && fence > current) this.retireFence(pool, fence);
      this.staleWrites.set(pool, (this.staleWrites.get(pool) ?? 0) + 1);
      return { accepted: false, changed: 0, stamps: [] };
    }
    let freshEpoch: string | undefined;
    const changes: BadgeChange[] = [];
    const stamps = writes.map(({ user, fields, computedAt: own }) => {
      const at = own ?? computedAt;
      const stamp = saveBadgeState(
        this.badges,
        user,
        fields,
        at,
        () => (freshEpoch ??= newEpoch()),
        fence === null,
      );
      if (stamp.changed) {
        const stored = this.badges.get(user)!;
        changes.push({
          user,
          epoch: stamp.epoch,
          version: stamp.version,
          fields: { ...stored.fields },
          computedAt: at,
        });
      }
      return stamp;
    });
    if (changes.length > 0) this.publish(pool, changes, fence === null);
    // Every write here compares with the stored state; a writer's belief is only updated.
    writes.forEach(({ known }, i) => {
      if (known) {
        known.epoch = stamps[i]!.epoch;
        known.version = stamps[i]!.version;
      }
    });
    return { accepted: true, changed: changes.length, stamps };
  }

  async staleWritesRejected(pool: number): Promise<number> {
    return this.staleWrites.get(pool) ?? 0;
  }

  async subscribe(pools: readonly number[], handler: ChangeHandler): Promise<() => Promise<void>> {
    const subscribed = [...new Set(pools)];
    for (const pool of subscribed) {
      let set = this.handlers.get(pool);
      if (!set) this.handlers.set(pool, (set = new Set()));
      set.add(handler);
    }
    return async () => {
      for (const pool of subscribed) this.handlers.get(pool)?.delete(handler);
    };
  }

  async route(gateway: string, users: readonly string[], ttlMs: number): Promise<void> {
    const now = this.now();
    for (const user of users) {
      let gateways = this.routes.get(user);
      if (!gateways) this.routes.set(user, (gateways = new Map()));
      for (const [other, expiry] of gateways) if (expiry <= now) gateways.delete(other);
      gateways.set(gateway, now + ttlMs);
    }
  }

  async unroute(gateway: string, users: readonly string[]): Promise<string[]> {
    const now = this.now();
    const orphaned: string[] = [];
    for (const user of users) {
      const gateways = this.routes.get(user);
      if (gateways) {
        gateways.delete(gateway);
        for (const [other, expiry] of gateways) if (expiry <= now) gateways.delete(other);
        if (gateways.size > 0) continue;
        this.routes.delete(user);
      }
      orphaned.push(user);
    }
    return orphaned;
  }

  /** The inactive-user job forgets the user's routes (lapsed by then) with their state. */
  forgetRoutes(user: string): void {
    this.routes.delete(user);
  }

  hasRoutes(user: string): boolean {
    return this.routes.has(user);
  }

  async subscribeGateway(
    gateway: string,
    handler: (changes: BadgeChangeReader) => void,
  ): Promise<() => Promise<void>> {
    let set = this.gatewayHandlers.get(gateway);
    if (!set) this.gatewayHandlers.set(gateway, (set = new Set()));
    set.add(handler);
    return async () => {
      this.gatewayHandlers.get(gateway)?.delete(handler);
    };
  }

  async signalLists(users: readonly string[]): Promise<void> {
    const now = this.now();
    const byGateway = new Map<string, string[]>();
    for (const user of users) {
      for (const [gateway, expiry] of this.routes.get(user) ?? []) {
        if (expiry <= now) continue;
        let list = byGateway.get(gateway);
        if (!list) byGateway.set(gateway, (list = []));
        list.push(user);
      }
    }
    for (const [gateway, list] of byGateway) {
      for (const handler of this.listHandlers.get(gateway) ?? []) {
        queueMicrotask(() => {
          if (this.listHandlers.get(gateway)?.has(handler)) handler([...list]);
        });
      }
    }
  }

  async subscribeListSignals(
    gateway: string,
    handler: (users: string[]) => void,
  ): Promise<() => Promise<void>> {
    let set = this.listHandlers.get(gateway);
    if (!set) this.listHandlers.set(gateway, (set = new Set()));
    set.add(handler);
    return async () => {
      this.listHandlers.get(gateway)?.delete(handler);
    };
  }

  /** Nothing to forget: a process's own messages are not counted. */
  async forgetGateways(): Promise<number> {
    return 0;
  }

  async storedStates(users: readonly string[]): Promise<BadgeChange[]> {
    const states: BadgeChange[] = [];
    for (const user of users) {
      const stored = this.badges.get(user);
      if (stored) states.push({ user, ...structuredClone(stored) });
    }
    return states;
  }

  /** Delivered later, as over Redis: a handler never runs inside the writer's call. */
  /** As saveBadges-8.lua: the pool's subscribers hear unfenced changes, gateways every change. */
  private publish(pool: number, changes: BadgeChange[], unfenced: boolean): void {
    // Route expiries are times of the store's clock, as in saveBadges-8.lua.
    const now = this.now();
    for (const handler of unfenced ? (this.handlers.get(pool) ?? []) : []) {
      queueMicrotask(() => {
        if (this.handlers.get(pool)?.has(handler)) handler(pool, structuredClone(changes));
      });
    }
    const byGateway = new Map<string, BadgeChange[]>();
    for (const change of changes) {
      for (const [gateway, expiry] of this.routes.get(change.user) ?? []) {
        if (expiry <= now) continue;
        let list = byGateway.get(gateway);
        if (!list) byGateway.set(gateway, (list = []));
        list.push(change);
      }
    }
    for (const [gateway, list] of byGateway) {
      for (const handler of this.gatewayHandlers.get(gateway) ?? []) {
        queueMicrotask(() => {
          if (this.gatewayHandlers.get(gateway)?.has(handler)) {
            handler(new ChangeList(structuredClone(list)));
          }
        });
      }
    }
  }
}

/**
 * The badge-state write both memory BadgeStates and fenced writes perform on the shared map:
 * only non-zero counts are kept; the version moves on only when they differ (sameCounts, the
 * rule the Redis script applies to their text); a user with no state starts at version 1 in a
 * fresh epoch.
 */
function saveBadgeState(
  badges: Map<string, StoredBadge>,
  user: string,
  fields: BadgeFields,
  computedAt: number,
  freshEpoch: () => string = newEpoch,
  /** A core's unchanged counts keep the time they were stored at (as saveBadges-8.lua). */
  touchUnchanged = true,
): BadgeStamp {
  const nonZero = idRecord<number>();
  for (const [name, value] of Object.entries(fields)) if (value !== 0) nonZero[name] = value;
  const stored = badges.get(user);
  if (!stored) {
    const fresh = { epoch: freshEpoch(), version: 1, computedAt, fields: nonZero };
    badges.set(user, fresh);
    return { epoch: fresh.epoch, version: 1, changed: true };
  }
  if (sameCounts(stored.fields, nonZero)) {
    if (touchUnchanged) stored.computedAt = computedAt;
    return { epoch: stored.epoch, version: stored.version, changed: false };
  }
  stored.computedAt = computedAt;
  stored.fields = nonZero;
  stored.version++;
  return { epoch: stored.epoch, version: stored.version, changed: true };
}

/** As saveBadges-8.lua: only the current token is accepted, and none while no token was taken. */
function isCurrentFence(fence: number, current: number): boolean {
  return current !== 0 && fence === current;
}

function checkPool(writes: readonly FencedBadgeWrite[], pool: number, pools: number): void {
  for (const { user } of writes) {
    if (poolOf(user, pools) !== pool) throw new RangeError(`user ${user} is not in pool ${pool}`);
  }
}
