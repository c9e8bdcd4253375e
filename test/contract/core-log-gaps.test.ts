/**
 * A core whose change logs have a gap rebuilds what it holds. A pool log trimmed past the
 * core's position may have taken a user's offline event with it: the core rebuilds that pool's
 * held set from presence (letting go of users no longer online, loading new ones). A log whose
 * key vanished (a Redis restarted empty, eviction) is recreated by the next append: the core
 * must see that as a gap too, not as a log that went on.
 */
import { FEED_FIELD, poolOf, systemClock } from '@bubble/protocol';
import { BadgeService } from '@bubble/badges';
import { RedisKeys, type BubbleStore, type PoolEvent } from '@bubble/store';
import { expect, it } from 'vitest';
import { describeEachEngine } from '../support/engines.js';
import { startSoloCore } from '../support/solo-core.js';

const HOUR_MS = 3_600_000;

/** A user other than `user` in the same pool. */
function poolMate(user: string, pools: number): string {
  for (let i = 0; ; i++) {
    const candidate = `mate${i}`;
    if (poolOf(candidate, pools) === poolOf(user, pools)) return candidate;
  }
}

/** Appends more events to the pool's log than it keeps, in batches (none about held users). */
async function overflowPoolLog(store: BubbleStore, pool: number): Promise<void> {
  const beyondCap = 10_000 + 1_000;
  for (let from = 0; from < beyondCap; from += 1_000) {
    const events: PoolEvent[] = Array.from({ length: 1_000 }, (_, i) => ({
      kind: 'follows',
      user: `filler${from + i}`,
    }));
    await store.changes.appendPoolEvents(pool, events);
  }
}

async function storedFeed(store: BubbleStore, user: string): Promise<number | undefined> {
  return (await store.badges.load(user))?.fields[FEED_FIELD];
}

describeEachEngine('bubble-core: change log gaps', (ctx, engine) => {
  it('a trimmed pool log: users whose offline event was trimmed are let go, new ones loaded', async () => {
    const { store } = ctx();
    const service = new BadgeService(store, systemClock);
    const alice = 'alice';
    const bob = poolMate(alice, store.pools);
    const pool = poolOf(alice, store.pools);
    await service.follow(alice, 'writer');
    await service.follow(bob, 'writer');
    await service.ingestPosts([{ author: 'writer', id: 'p1', ts: Date.now() - 10_000 }]);
    await service.setPresence(alice, true, HOUR_MS);
    const core = await startSoloCore(store, { id: 'core-trim', reconcilePerSweep: 0 });
    try {
      await core.sweepNow();
      expect(core.counter.hasUser(alice)).toBe(true);
      expect(core.counter.hasUser(bob)).toBe(false);

      // Between two sweeps: alice leaves, bob comes, and the pool's log overflows its cap, so
      // both presence events are trimmed before the core reads them.
      await service.setPresence(alice, false, HOUR_MS);
      await service.setPresence(bob, true, HOUR_MS);
      await overflowPoolLog(store, pool);
      const read = (await store.changes.readPoolEvents([{ pool, after: '0-0' }], 20_000)).get(
        pool,
      )!;
      expect(read.gap).toBe(true);
      expect(read.entries.some((e) => e.event.user === alice || e.event.user === bob)).toBe(false);

      await core.sweepNow();
      expect(core.counter.hasUser(alice)).toBe(false);
      expect(core.counter.hasUser(bob)).toBe(true);
      expect(core.counter.countOf(bob)).toBe(1);
      expect(await storedFeed(store, bob)).toBe(1);
      // The pool is followed from the log's end again: a later event is applied.
      await service.setPresence(bob, false, HOUR_MS);
      await core.sweepNow();
      expect(core.counter.hasUser(bob)).toBe(false);
    } finally {
      await core.close();
    }
  }, 60_000);

  if (engine !== 'redis') return;

  it('a log whose key vanished and was recreated by the next append: the core reloads', async () => {
    const { store, admin, prefix } = ctx();
    const keys = new RedisKeys(prefix!, store.pools);
    const service = new BadgeService(store, systemClock);
    const alice = 'alice';
    const bob = poolMate(alice, store.pools);
    const pool = poolOf(alice, store.pools);
    const ts = Date.now() - 10_000;
    await service.follow(alice, 'writer');
    await service.follow(bob, 'writer');
    await service.ingestPosts([{ author: 'writer', id: 'p1', ts }]);
    await service.setPresence(alice, true, HOUR_MS);
    const core = await startSoloCore(store, { id: 'core-lost', reconcilePerSweep: 0 });
    try {
      await core.sweepNow();
      expect(core.counter.countOf(alice)).toBe(1);

      // Logged while the core does not read, then the logs' keys vanish (evicted, say) and the
      // next events recreate them: the new streams read as if nothing came between.
      await service.ingestPosts([{ author: 'writer', id: 'p2', ts: ts + 1 }]);
      await service.setPresence(alice, false, HOUR_MS);
      await admin!.del(keys.postEvents(), keys.poolEvents(pool));
      await service.ingestPosts([{ author: 'writer', id: 'p3', ts: ts + 2 }]);
      await service.setPresence(bob, true, HOUR_MS);

      await core.sweepNow();
      expect(core.counter.hasUser(alice)).toBe(false);
      expect(core.counter.countOf(bob)).toBe(3);
      expect(await storedFeed(store, bob)).toBe(3);
      // Followed from the recreated logs' ends: later events are applied.
      await service.ingestPosts([{ author: 'writer', id: 'p4', ts: ts + 3 }]);
      await core.sweepNow();
      expect(await storedFeed(store, bob)).toBe(4);
    } finally {
      await core.close();
    }
  }, 60_000);
});
