/**
 * Ticks and sweeps: a tick that finds a sweep running is kept and runs right after it (so a
 * change never waits a whole extra tick); ticks beyond that one are skipped and counted.
 */
import { systemClock } from '@bubble/protocol';
import { BadgeService } from '@bubble/badges';
import { waitFor } from '@bubble/test-utils';
import { expect, it } from 'vitest';
import { describeEachEngine } from '../support/engines.js';
import { startSoloCore } from '../support/solo-core.js';

describeEachEngine('bubble-core ticks', (ctx) => {
  it('runs one sweep after the running one for the ticks that came meanwhile', async () => {
    const { store } = ctx();
    const service = new BadgeService(store, systemClock);
    const core = await startSoloCore(store, { id: 'core-t' });
    try {
      await service.follow('alice', 'bob');
      await service.setPresence('alice', true, 3_600_000);
      await core.sweepNow();
      const before = { ...core.totals };

      // The first starts a sweep; the second is kept for after it; the third adds nothing.
      core.requestSweep();
      await service.ingestPosts([{ author: 'bob', id: 'p1', ts: Date.now() - 1_000 }]);
      core.requestSweep();
      core.requestSweep();
      expect(core.totals.skipped - before.skipped).toBe(1);

      // sweepNow waits for what runs (the sweep and the one kept) and adds one: three in all.
      await core.sweepNow();
      expect(core.totals.sweeps - before.sweeps).toBe(3);
      expect(core.totals.skipped - before.skipped).toBe(1);
      await waitFor(async () => (await service.badge('alice')).feed === 1, {
        timeoutMs: 10_000,
        message: 'the post made during a sweep was never counted',
      });
    } finally {
      await core.close();
    }
  }, 60_000);
});
