/**
 * A badge a core pushes is as of its counters' count (docs/api.md, "Reading what the client was
 * shown"): a read with `upTo` = its computedAt clears every event it counted and none it missed,
 * also when the event was stored while the sweep was reading its logs, so that the core wrote the
 * badge (for a new post) without reloading the counters.
 *
 * A real CoreNode owns every pool and sweeps on request. fast-check's scheduler decides when the
 * counter ingests reach the store and when the sweep's log reads and counts are answered, so
 * events land before, between and after a sweep's reads; posts by a followed author make the
 * sweeps write. With c the count the last stored badge shows and n the events stored, the
 * definition (arrivedAt > readAt) gives after the read exactly n − c events left. The memory
 * engine and the core share a clock that ticks on every read, so no two calls share a
 * millisecond; Redis stamps on the server's TIME.
 */
import { BadgeService } from '@bubble/badges';
import { type Clock, decodeFields } from '@bubble/protocol';
import type { BubbleStore, ChangeLog, InteractionCounters } from '@bubble/store';
import { MemoryStore } from '@bubble/store';
import fc from 'fast-check';
import { expect, it } from 'vitest';
import { T0, TEST_POOLS, describeEachEngine, type EngineName } from '../support/engines.js';
import { startSoloCore } from '../support/solo-core.js';

const RUNS: Record<EngineName, number> = { memory: 100, redis: 30 };
const USER = 'watcher';
const AUTHOR = 'poster';
const KIND = 'mention';
const WINDOW_MS = 30 * 86_400_000;

type Op = { kind: 'events'; ids: string[] } | { kind: 'post'; id: string } | { kind: 'sweep' };

const opsArb = fc
  .record({
    events: fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 1, maxLength: 3 }),
    posts: fc.integer({ min: 1, max: 3 }),
    sweeps: fc.integer({ min: 1, max: 3 }),
  })
  .map(({ events, posts, sweeps }) => {
    let next = 0;
    const ops: Op[] = [
      ...events.map((n): Op => ({
        kind: 'events',
        ids: Array.from({ length: n }, () => `e${next++}`),
      })),
      ...Array.from({ length: posts }, (_, i): Op => ({ kind: 'post', id: `p${i}` })),
      ...Array.from({ length: sweeps }, (): Op => ({ kind: 'sweep' })),
    ];
    return { ops, fresh: next };
  });

/**
 * `store` whose counter ingests, counts and log reads go through the scheduler while
 * `racing.on`: an ingest is issued when the scheduler says, a count or log read answered when it
 * says (the core's other calls run freely).
 */
function scheduledStore(store: BubbleStore, s: fc.Scheduler, racing: { on: boolean }): BubbleStore {
  const answer = <T>(label: string, call: () => Promise<T>): Promise<T> =>
    racing.on ? s.schedule(call(), label) : call();
  const issue = async <T>(label: string, call: () => Promise<T>): Promise<T> => {
    if (racing.on) await s.schedule(Promise.resolve(), label);
    return call();
  };
  const real = store.counters;
  const counters: InteractionCounters = {
    ingest: (events, windowMs) =>
      issue(`ingest ${events.map((e) => e.id).join(',')}`, () => real.ingest(events, windowMs)),
    retract: (event, windowMs) => real.retract(event, windowMs),
    read: (user, kinds, upTo) => real.read(user, kinds, upTo),
    counts: (user, kinds, windowMs) => answer('count', () => real.counts(user, kinds, windowMs)),
    dropUsers: (users) => real.dropUsers(users),
  };
  const changes = new Proxy(store.changes, {
    get: (target, prop) => {
      const value = Reflect.get(target, prop, target) as unknown;
      if (typeof value !== 'function') return value;
      const method = (value as (...args: unknown[]) => Promise<unknown>).bind(target);
      if (prop === 'readPoolEvents' || prop === 'readPostEvents') {
        return (...args: unknown[]) => answer(`${String(prop)}`, () => method(...args));
      }
      return method;
    },
  }) as ChangeLog;
  return new Proxy(store, {
    get: (target, prop) => {
      if (prop === 'counters') return counters;
      if (prop === 'changes') return changes;
      return Reflect.get(target, prop, target);
    },
  });
}

describeEachEngine('a core-pushed badge racing counter events', (ctx, engine) => {
  it('a read up to its computedAt clears what it counted and never an event it missed', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.scheduler(),
        opsArb,
        fc.integer({ min: 1, max: 3 }),
        async (s, { ops, fresh }, before) => {
          let tick = T0;
          const clock: Clock = { now: () => (engine === 'memory' ? ++tick : Date.now()) };
          const store =
            engine === 'memory'
              ? new MemoryStore({ pools: TEST_POOLS, now: clock.now })
              : ctx().freshStore();
          const racing = { on: false };
          const scheduled = scheduledStore(store, s, racing);
          const plain = new BadgeService(store, clock);
          const service = new BadgeService(scheduled, clock);
          await plain.follow(USER, AUTHOR);
          await plain.setPresence(USER, true, 3_600_000);
          // The user has counter state before the race (see docs/api.md for a first event).
          await plain.ingestCounterEvents(
            Array.from({ length: before }, (_, i) => ({ user: USER, kind: KIND, id: `old${i}` })),
          );
          const core = await startSoloCore(scheduled, { clock, reconcilePerSweep: 0 });
          try {
            await core.sweepNow();
            racing.on = true;
            const tasks = ops.map(async (op) => {
              await s.schedule(Promise.resolve(), `start ${op.kind}`);
              if (op.kind === 'events') {
                await service.ingestCounterEvents(
                  op.ids.map((id) => ({ user: USER, kind: KIND, id })),
                );
              } else if (op.kind === 'post') {
                await service.ingestPosts([{ author: AUTHOR, id: op.id, ts: clock.now() }]);
              } else {
                await core.sweepNow();
              }
            });
            await s.waitFor(Promise.all(tasks));
            await s.waitIdle();
            racing.on = false;

            const stored = await store.badges.load(USER);
            expect(stored, 'the core stored a badge').not.toBeNull();
            const shown = decodeFields(stored!.fields).counters[KIND] ?? 0;
            await plain.read(USER, { scope: 'counter', kind: KIND, upTo: stored!.computedAt });
            const left = (await store.counters.counts(USER, [KIND], WINDOW_MS)).counts[KIND] ?? 0;
            const where = `${s
              .report()
              .map((t) => t.label)
              .join(' | ')}\nshown ${shown}`;
            expect(left, where).toBe(before + fresh - shown);
          } finally {
            await core.close();
            if (engine === 'memory') await store.close();
          }
        },
      ),
      { numRuns: RUNS[engine] },
    );
  });
});
