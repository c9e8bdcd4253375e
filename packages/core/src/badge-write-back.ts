import { FEED_FIELD } from '@bubble/protocol';
import type { BubbleStore, FencedBadgeWrite, KnownBadge } from '@bubble/store';
import type { CoreMetrics } from './core-metrics.js';
import type { ExtrasTracker } from './extras-tracker.js';
import type { FeedCounter } from './feed-counter.js';
import { leaseHoldsForWrite, type PoolTenures } from './pool-tenures.js';
import type { StoredBeliefs } from './stored-beliefs.js';

export interface BadgeWriteBackOptions {
  store: BubbleStore;
  counter: FeedCounter;
  extras: ExtrasTracker;
  beliefs: StoredBeliefs;
  tenures: PoolTenures;
  metrics?: CoreMetrics;
  totals: { staleWritesRejected: number };
}

/** Pools whose write-back is encoded before the client is let flush them to Redis. */
const POOLS_PER_FLUSH = 8;

/**
 * The fenced, batched write-back of the changed badges: one call per pool with changes. Its
 * scratch (the grouping by pool, the write objects) is kept from sweep to sweep: a sweep's
 * write-back makes no garbage that lives across collections.
 */
export class BadgeWriteBack {
  private writeIds = new Int32Array(0);
  private writeFeeds = new Int32Array(0);
  private writePools = new Int32Array(0);
  private byPool = new Int32Array(0);
  private writeMarks = new Int32Array(0);
  private writeStamp = 0;
  private readonly writeSlots: WriteSlot[] = [];

  constructor(private readonly options: BadgeWriteBackOptions) {}

  /** Writes the badges whose feed or extras changed; resolves to how many states changed. */
  async write(now: number): Promise<number> {
    const { store, counter, extras, beliefs } = this.options;
    const pools = store.pools;
    const { ids, counts } = counter.takeChanged();
    // Counter ids and feeds of the changed users, then grouped by pool (a counting sort).
    // Each pool's writes are made only when it is sent.
    const extrasOnly = extras.takeChanged();
    this.ensureScratch(ids.length + extrasOnly.length, counter.users.capacity);
    const { writeIds, writeFeeds, writePools, byPool, writeMarks } = this;
    let total = 0;
    if (++this.writeStamp === 0x7fffffff) {
      writeMarks.fill(0);
      this.writeStamp = 1;
    }
    const mark = this.writeStamp;
    for (let i = 0; i < ids.length; i++) {
      writeIds[total] = ids[i]!;
      writeFeeds[total++] = counts[i]!;
      writeMarks[ids[i]!] = mark;
    }
    for (const user of extrasOnly) {
      const id = counter.users.idOf(user);
      if (id === undefined || writeMarks[id] === mark) continue;
      writeIds[total] = id;
      writeFeeds[total++] = counter.countOf(user) ?? 0;
    }
    const poolStart = new Int32Array(pools + 1);
    for (let i = 0; i < total; i++) {
      const pool = beliefs.poolAt(writeIds[i]!);
      writePools[i] = pool;
      poolStart[pool + 1]!++;
    }
    for (let p = 0; p < pools; p++) poolStart[p + 1]! += poolStart[p]!;
    const fill = poolStart.slice(0, pools);
    for (let i = 0; i < total; i++) byPool[fill[writePools[i]!]!++] = i;

    // Each pool's batch goes out as soon as it is encoded (a yield lets the client flush it),
    // so Redis stores the first pools while the core encodes the next ones.
    const saves: Promise<void>[] = [];
    let changed = 0;
    let failure: unknown;
    let sent = 0;
    for (let pool = 0; pool < pools; pool++) {
      const from = poolStart[pool]!;
      const to = poolStart[pool + 1]!;
      if (from === to) continue;
      saves.push(
        this.savePool(pool, from, to, now).then(
          (n) => {
            changed += n;
          },
          (err: unknown) => {
            failure ??= err;
          },
        ),
      );
      if (++sent % POOLS_PER_FLUSH === 0)
        await new Promise<void>((resolve) => setImmediate(resolve));
    }
    await Promise.all(saves);
    if (failure !== undefined) throw failure;
    return changed;
  }

  /** Saves the writes byPool[from, to) of one pool; resolves to how many changed a state. */
  private async savePool(pool: number, from: number, to: number, now: number): Promise<number> {
    const { store, beliefs, tenures, metrics, totals } = this.options;
    const held = tenures.get(pool);
    if (!held) return 0;
    if (!leaseHoldsForWrite(held)) {
      await tenures.drop(pool, 'lease lost or ending');
      return 0;
    }
    try {
      // The writes are made and read by the store in this same synchronous step: the next
      // pool's reuse the same objects.
      const result = await store.fencedBadges.saveFenced(
        pool,
        held.fence,
        this.writesOf(from, to),
        now,
        { seenLog: held.cursor },
      );
      if (!result.accepted) {
        totals.staleWritesRejected++;
        metrics?.staleWritesRejected.inc();
        // No token stored: Redis lost it (or retired it on seeing a token it forgot issuing).
        // Taken again next sweep, under a new token, the users reloaded.
        const current = await store.coordination.currentFence(pool).catch(() => undefined);
        await tenures.drop(
          pool,
          current === 0 ? 'fencing token lost by the store' : 'fencing token is stale',
        );
        return 0;
      }
      metrics?.badgesWritten.inc(result.changed);
      return result.changed;
    } catch (err) {
      // Hand the counts out again next sweep; whether this batch went in is unknown.
      for (let k = from; k < to; k++) {
        const id = this.writeIds[this.byPool[k]!]!;
        beliefs.forgetStored(id, this.options.counter.nameAt(id));
      }
      throw err;
    }
  }

  /**
   * The writes byPool[from, to), in reused objects: the store has read a batch's writes when
   * saveFenced returns, so they serve from pool to pool and sweep to sweep.
   */
  private writesOf(from: number, to: number): FencedBadgeWrite[] {
    const { counter, beliefs } = this.options;
    const slots = this.writeSlots;
    while (slots.length < to - from) slots.push(new WriteSlot());
    const writes: FencedBadgeWrite[] = new Array(to - from);
    // Skips a lookup per user where nobody has notices, red dots or conversations.
    const extras = this.options.extras.noneHeld ? null : this.options.extras;
    for (let k = from; k < to; k++) {
      const i = this.byPool[k]!;
      const slot = slots[k - from]!;
      const id = this.writeIds[i]!;
      const user = counter.nameAt(id);
      slot.user = user;
      slot.known = beliefs.knownAt(id);
      slot.feedOnly[FEED_FIELD] = this.writeFeeds[i]!;
      slot.fields = slot.feedOnly;
      slot.computedAt = undefined;
      if (extras) {
        const fields: Record<string, number> = { ...slot.feedOnly };
        extras.addFieldsOf(user, fields);
        slot.fields = fields;
        // The counters' watermark, not the sweep's time: an event stored after their count
        // (even one logged after this sweep read the log) is stamped after it.
        slot.computedAt = extras.countersAsOf(user) ?? undefined;
      }
      writes[k - from] = slot;
    }
    return writes;
  }

  /** Grows the scratch arrays to `n` writes of users with ids below `capacity`. */
  private ensureScratch(n: number, capacity: number): void {
    if (this.writeIds.length < n) {
      const size = Math.max(n, 2 * this.writeIds.length);
      this.writeIds = new Int32Array(size);
      this.writeFeeds = new Int32Array(size);
      this.writePools = new Int32Array(size);
      this.byPool = new Int32Array(size);
    }
    if (this.writeMarks.length < capacity) {
      const marks = new Int32Array(Math.max(capacity, 2 * this.writeMarks.length));
      marks.set(this.writeMarks);
      this.writeMarks = marks;
    }
  }
}

/** A write of the write-back, reused (see writesOf). A zero feed is stored as absent. */
class WriteSlot implements FencedBadgeWrite {
  user = '';
  known: KnownBadge | undefined = undefined;
  readonly feedOnly: Record<typeof FEED_FIELD, number> = { [FEED_FIELD]: 0 };
  fields: Readonly<Record<string, number>> = this.feedOnly;
  computedAt: number | undefined = undefined;
}
