/**
 * Reconciliation under the races a busy platform makes, on both engines. A user who reads every
 * second moves their cursor ahead of its log event twice in a row: the stored post count (0
 * after a read) stands still while the cursor moves, and that is not drift. `bubble simulate`
 * at 20k users and 1,000 posts/s showed it: counts of 37–353 "repaired" to 0, the counts the
 * pending cursor events were about to give. With few users held, a suspect was also checked a
 * second time in the same sweep (as the round robin's next), and that second check "confirmed"
 * the first's new signature with nothing read between them. And a core that is behind on the logs every sweep still reconciles, with a
 * smaller batch, so real drift is repaired.
 */
import { FEED_FIELD, poolOf, systemClock } from '@bubble/protocol';
import { BadgeService } from '@bubble/badges';
import type { PoolEvent } from '@bubble/store';
import { waitFor } from '@bubble/test-utils';
import { expect, it } from 'vitest';
import { describeEachEngine } from '../support/engines.js';
import { startSoloCore } from '../support/solo-core.js';

const HOUR_MS = 3_600_000;

describeEachEngine('bubble-core reconciliation races', (ctx) => {
  it('a cursor moved twice ahead of its log event is not repaired as drift', async () => {
    const { store } = ctx();
    const service = new BadgeService(store, systemClock);
    await service.follow('alice', 'bob');
    await service.ingestPosts([{ author: 'bob', id: 'p1', ts: Date.now() - 10_000 }]);
    await service.setPresence('alice', true, HOUR_MS);
    const core = await startSoloCore(store, { id: 'core-race', reconcilePerSweep: 50 });
    try {
      await core.sweepNow();
      expect(core.counter.countOf('alice')).toBe(1);

      // Two reads whose cursor events are not logged yet when the next sweeps look.
      const first = await store.cursors.advanceFeedReadAt('alice', Date.now());
      await core.sweepNow();
      const second = await store.cursors.advanceFeedReadAt('alice', first + 1);
      await core.sweepNow();
      await store.changes.appendPoolEvents(poolOf('alice', store.pools), [
        { kind: 'cursor', user: 'alice', readAt: first },
        { kind: 'cursor', user: 'alice', readAt: second },
      ]);
      await core.sweepNow();

      expect(core.counter.countOf('alice')).toBe(0);
      expect((await store.badges.load('alice'))?.fields[FEED_FIELD] ?? 0).toBe(0);
      expect(core.totals.driftRepaired).toBe(0);
    } finally {
      await core.close();
    }
  }, 60_000);

  it('a core behind on the logs every sweep still finds and repairs drift', async () => {
    const { store } = ctx();
    const service = new BadgeService(store, systemClock);
    await service.follow('alice', 'bob');
    await service.ingestPosts([
      { author: 'bob', id: 'p1', ts: Date.now() - 10_000 },
      { author: 'carol', id: 'p2', ts: Date.now() - 10_000 },
    ]);
    await service.setPresence('alice', true, HOUR_MS);
    const core = await startSoloCore(store, {
      id: 'core-behind',
      reconcilePerSweep: 4,
      maxEventsPerRead: 2,
    });
    const pool = poolOf('alice', store.pools);
    try {
      await core.sweepNow();
      expect(core.counter.countOf('alice')).toBe(1);
      // Stored behind the core's back: no change-log entry.
      await store.follows.replace('alice', ['bob', 'carol']);

      let sweeps = 0;
      await waitFor(
        async () => {
          // More pool events than one read takes: every sweep reads a full batch.
          const busy: PoolEvent[] = Array.from({ length: 3 }, (_, i) => ({
            kind: 'follows',
            user: `nobody${sweeps}-${i}`,
          }));
          await store.changes.appendPoolEvents(pool, busy);
          await core.sweepNow();
          sweeps++;
          return core.totals.driftRepaired >= 1;
        },
        { timeoutMs: 20_000, message: 'a core behind on the logs never reconciled' },
      );
      expect(core.counter.countOf('alice')).toBe(2);
      await core.sweepNow();
      expect((await store.badges.load('alice'))?.fields[FEED_FIELD]).toBe(2);
    } finally {
      await core.close();
    }
  }, 60_000);
});
