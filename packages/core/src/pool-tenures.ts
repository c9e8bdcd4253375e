import { poolOf } from '@bubble/protocol';
import type { Assignment, BubbleStore, HeldLock, PoolLocks } from '@bubble/store';
import type { Logger } from 'pino';

/** A pool this core holds, from taking its lock until giving it up. */
export interface PoolTenure {
  pool: number;
  lock: HeldLock;
  /** The pool's fencing token, taken with the lock: every write-back is guarded by it. */
  fence: number;
  /** Position in the pool's change log up to which events are applied. */
  cursor: string;
  /** The pool's online users, all held in memory. */
  users: Set<string>;
}

export interface PoolTenuresOptions {
  id: string;
  store: BubbleStore;
  locks: PoolLocks;
  log: Logger;
  leaseMs: number;
  /** Most lapsed presences removed per pool by one expirePresence. */
  expirePerSweep: number;
  /** Lets go of a user who is no longer held (their pool given up, or gone offline). */
  release: (user: string) => void;
}

/** A lease this close to its end is not written under. */
const LEASE_SAFETY_MS = 200;

/** The pools a core holds: taken as the assignment gives them, given up when it moves them. */
export class PoolTenures {
  private readonly held = new Map<number, PoolTenure>();

  constructor(private readonly options: PoolTenuresOptions) {}

  get size(): number {
    return this.held.size;
  }

  get pools(): number[] {
    return [...this.held.keys()].sort((a, b) => a - b);
  }

  /** The tenures in the order they were taken. */
  all(): PoolTenure[] {
    return [...this.held.values()];
  }

  get(pool: number): PoolTenure | undefined {
    return this.held.get(pool);
  }

  /** Whether the user is online in a pool held now. */
  holdsUser(user: string): boolean {
    return this.held.get(poolOf(user, this.options.store.pools))?.users.has(user) ?? false;
  }

  /**
   * Takes the pools assigned to us that we do not hold, gives up the others. Returns the
   * tenures taken: their users are not loaded yet.
   */
  async follow(assignment: Assignment | null): Promise<PoolTenure[]> {
    const { id, store, locks, leaseMs, log } = this.options;
    const mine = new Set<number>();
    assignment?.owners.forEach((owner, pool) => {
      if (owner === id) mine.add(pool);
    });
    for (const [pool, held] of [...this.held]) {
      if (!mine.has(pool)) await this.drop(pool, 'reassigned');
      // Dropped here and taken again below, under a new lock and a new fencing token.
      else if (held.lock.signal.aborted) await this.drop(pool, 'lease lost');
    }
    const wanted = [...mine].filter((pool) => !this.held.has(pool));
    const joined: PoolTenure[] = [];
    await Promise.all(
      wanted.map(async (pool) => {
        const lock = await locks.tryAcquire(pool, leaseMs);
        if (!lock) return;
        try {
          const fence = await store.coordination.nextFence(pool);
          const cursor = await store.changes.poolLogEnd(pool);
          const members = await store.presence.members(pool);
          const held: PoolTenure = { pool, lock, fence, cursor, users: new Set(members) };
          lock.signal.addEventListener('abort', () => {
            if (this.held.get(pool) === held) log.warn({ pool }, 'pool lease lost');
          });
          this.held.set(pool, held);
          joined.push(held);
        } catch (err) {
          await lock.release();
          throw err;
        }
      }),
    );
    if (joined.length > 0) {
      log.info(
        { pools: joined.map((p) => p.pool), fences: joined.map((p) => p.fence) },
        'pools taken',
      );
    }
    return joined;
  }

  async drop(pool: number, reason: string): Promise<void> {
    const held = this.held.get(pool);
    if (!held) return;
    this.held.delete(pool);
    for (const user of held.users) this.options.release(user);
    // Logged as it happens, not after the release (up to a lease on a silent server): a late
    // line would follow a later 'pools taken' of the same pool and misstate what is held.
    this.options.log.info({ pool, reason }, 'pool dropped');
    await held.lock.release();
  }

  /** Gives up every pool held; never rejects. */
  async dropAll(reason: string): Promise<void> {
    await Promise.allSettled([...this.held.keys()].map((pool) => this.drop(pool, reason)));
  }

  /**
   * Removes the lapsed presences of every pool held (at most `expirePerSweep` each) and lets
   * their users go. The offline events this records come back through the log; removing them
   * now saves a sweep.
   */
  async expirePresence(): Promise<void> {
    const { store, expirePerSweep, release } = this.options;
    const tenures = this.all();
    const expired = await Promise.all(
      tenures.map((p) => store.presence.expire(p.pool, expirePerSweep)),
    );
    tenures.forEach((held, i) => {
      for (const user of expired[i]!) {
        held.users.delete(user);
        release(user);
      }
    });
  }
}

/** Whether the tenure's lease holds long enough for a write under it. */
export function leaseHoldsForWrite(tenure: PoolTenure): boolean {
  return !tenure.lock.signal.aborted && tenure.lock.validUntil() >= Date.now() + LEASE_SAFETY_MS;
}
