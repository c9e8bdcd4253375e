/**
 * Reconciliation finds and repairs drift: changes written to the stored sources behind the
 * core's back (no change-log entry, as when a process dies between a write and its append)
 * are repaired within a few sweeps, counted, and the stored badge is right again.
 */
import { decodeFields, encodeFields, systemClock } from '@bubble/protocol';
import { BadgeService } from '@bubble/badges';
import { waitFor } from '@bubble/test-utils';
import { expect, it } from 'vitest';
import { describeEachEngine } from '../support/engines.js';
import { startSoloCore } from '../support/solo-core.js';

async function truthOf(service: BadgeService, user: string) {
  const [feed, extras] = await Promise.all([
    service.computeFeed(user, Date.now()),
    service.computeExtras(user),
  ]);
  return decodeFields(encodeFields(feed, extras));
}

describeEachEngine('bubble-core reconciliation', (ctx) => {
  it('repairs a feed count and a conversation count that drifted, and counts them', async () => {
    const { store } = ctx();
    const service = new BadgeService(store, systemClock);
    const core = await startSoloCore(store, { id: 'core-r', reconcilePerSweep: 50 });
    try {
      await service.follow('alice', 'bob');
      await service.replaceMembers('c1', ['alice', 'carol']);
      await service.setPresence('alice', true, 3_600_000);
      await service.ingestPosts([
        { author: 'bob', id: 'p1', ts: Date.now() - 10_000 },
        { author: 'dave', id: 'd1', ts: Date.now() - 5_000 },
      ]);
      await service.ingestMessages('c1', [{ seq: 1, from: 'carol' }]);
      await core.sweepNow();
      expect(decodeFields((await store.badges.load('alice'))!.fields)).toEqual(
        await truthOf(service, 'alice'),
      );

      // Behind the core's back: stored, but never appended to a change log (posts cannot be:
      // the store logs them with the write).
      await store.follows.replace('alice', ['bob', 'dave']);
      await store.conversations.ingest('c1', [{ seq: 4, from: 'carol', ts: Date.now() }]);
      const truth = await truthOf(service, 'alice');
      expect(truth).toMatchObject({ feed: 2, conversations: { c1: 4 } });

      await waitFor(
        async () => {
          await core.sweepNow();
          return core.totals.driftRepaired >= 1;
        },
        { timeoutMs: 20_000, message: 'reconciliation never repaired the drift' },
      );
      await core.sweepNow();
      expect(decodeFields((await store.badges.load('alice'))!.fields)).toEqual(truth);
      // Once repaired, nothing more is counted while the sources stand still.
      const repaired = core.totals.driftRepaired;
      for (let i = 0; i < 5; i++) await core.sweepNow();
      expect(core.totals.driftRepaired).toBe(repaired);
    } finally {
      await core.close();
    }
  }, 60_000);
});
