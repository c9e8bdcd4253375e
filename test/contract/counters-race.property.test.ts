/**
 * A counter read racing new events never loses one (docs/semantics.md, "Interaction counters"):
 * an event that arrived after the count of the badge a client was shown is stamped after that
 * badge's computedAt, so a read with that `upTo` leaves it counted.
 *
 * fast-check's scheduler decides when each concurrent counter call of the store is issued and
 * when its answer is delivered (the service's other store calls run freely). Each counter call
 * is atomic (one Lua script on Redis, a synchronous body in memory) and the calls of one run
 * share one connection, so the order the scheduler issues them in is the order they take
 * effect. Clients each compute a badge and read up to its computedAt, while fresh events are
 * ingested (some twice, in batches whose stamps run ahead of the clock). With S_j the events
 * stored before client j's count, the definition (arrivedAt > readAt, the stamps strictly
 * increasing and after every count served) gives exactly
 *
 *     counter(u) = |fresh − ∪ S_j|
 *
 * an event no badge counted is never cleared, and every one a badge showed is cleared by its
 * read (the events stored before the race too). The memory engine runs on a clock that ticks on
 * every read, so no two calls share a millisecond; Redis on the server's TIME.
 */
import { BadgeService } from '@bubble/badges';
import type { Badge } from '@bubble/protocol';
import type { BubbleStore, CounterEvent, InteractionCounters } from '@bubble/store';
import { MemoryStore } from '@bubble/store';
import fc from 'fast-check';
import { expect, it } from 'vitest';
import { T0, TEST_POOLS, describeEachEngine, type EngineName } from '../support/engines.js';

const RUNS: Record<EngineName, number> = { memory: 150, redis: 50 };
const USER = 'racer';
const KIND = 'mention';

type Op = { kind: 'ingest'; ids: string[] } | { kind: 'client' };

const scenarioArb = fc
  .record({ n0: fc.integer({ min: 0, max: 3 }), k: fc.integer({ min: 1, max: 4 }) })
  .chain(({ n0, k }) => {
    const fresh = Array.from({ length: k }, (_, i) => `e${i}`);
    return fc.record({
      n0: fc.constant(n0),
      fresh: fc.constant(fresh),
      // Every fresh event in some batch; a few sent again.
      batches: fc
        .shuffledSubarray(fresh, { minLength: k })
        .chain((all) =>
          fc
            .array(fc.subarray(all, { minLength: 1 }), { maxLength: 2 })
            .map((again) => [all, ...again]),
        ),
      clients: fc.integer({ min: 1, max: 3 }),
    });
  });

/**
 * `store` with its counter calls put through the scheduler, each recorded in `issued` as it
 * reaches the store; the count a badge makes is labelled with the client whose call made it.
 */
function scheduledStore(
  store: BubbleStore,
  s: fc.Scheduler,
  issued: string[],
  client: { current: number },
): BubbleStore {
  const real = store.counters;
  const through = async <T>(label: string, call: () => Promise<T>): Promise<T> => {
    await s.schedule(Promise.resolve(), `issue ${label}`);
    issued.push(label);
    return s.schedule(call(), `answer of ${label}`);
  };
  const counters: InteractionCounters = {
    ingest: (events, windowMs) =>
      through(`ingest ${events.map((e) => e.id).join(',')}`, () => real.ingest(events, windowMs)),
    retract: (event, windowMs) => real.retract(event, windowMs),
    read: (user, kinds, upTo) => through(`read ${upTo}`, () => real.read(user, kinds, upTo)),
    counts: (user, kinds, windowMs) => {
      const label = `count ${client.current}`;
      return through(label, () => real.counts(user, kinds, windowMs));
    },
    dropUsers: (users) => real.dropUsers(users),
  };
  return new Proxy(store, {
    get: (target, prop) => (prop === 'counters' ? counters : Reflect.get(target, prop, target)),
  });
}

/**
 * One call of each counter script on `store`'s server. The first call of a script on a fresh
 * redis-server is refused NOSCRIPT and sent again as EVAL a round trip later, behind calls
 * issued after it (ioredis' defineCommand): the order the scheduler issues calls in would then
 * not be the order they take effect, which is what the definitions below rely on.
 */
async function loadCounterScripts(store: BubbleStore): Promise<void> {
  const warm = [{ user: 'warm-up', kind: KIND, id: 'w' }];
  await store.counters.ingest(warm, 60_000);
  await store.counters.counts('warm-up', [KIND], 60_000);
  await store.counters.read('warm-up', [KIND], undefined);
}

describeEachEngine('counter read racing ingest', (ctx, engine) => {
  it('never loses an event that arrived after the badge a read clears up to', async () => {
    await fc.assert(
      fc.asyncProperty(fc.scheduler(), scenarioArb, async (s, { n0, fresh, batches, clients }) => {
        // Memory: a clock that ticks on every read, the store's and the service's alike.
        let tick = T0;
        const clock = { now: () => (engine === 'memory' ? ++tick : Date.now()) };
        const store =
          engine === 'memory'
            ? new MemoryStore({ pools: TEST_POOLS, now: clock.now })
            : ctx().freshStore();
        await loadCounterScripts(store);
        const plain = new BadgeService(store, clock);
        const before: CounterEvent[] = Array.from({ length: n0 }, (_, i) => ({
          user: USER,
          kind: KIND,
          id: `old${i}`,
        }));
        if (n0 > 0) await plain.ingestCounterEvents(before);

        const issued: string[] = [];
        const client = { current: -1 };
        const service = new BadgeService(scheduledStore(store, s, issued, client), clock);
        const ops: Op[] = [
          ...batches.map((ids): Op => ({ kind: 'ingest', ids })),
          ...Array.from({ length: clients }, (): Op => ({ kind: 'client' })),
        ];
        let clientCount = 0;
        const tasks = ops.map(async (op) => {
          if (op.kind === 'ingest') {
            await service.ingestCounterEvents(op.ids.map((id) => ({ user: USER, kind: KIND, id })));
            return;
          }
          const j = clientCount++;
          await s.schedule(Promise.resolve(), `client ${j} opens`);
          issued.push(`badge ${j}`);
          // badge() reads its clock and issues its count synchronously: the label is exact.
          client.current = j;
          const shown: Promise<Badge> = service.badge(USER);
          client.current = -1;
          const badge = await shown;
          await service.read(USER, { scope: 'counter', kind: KIND, upTo: badge.computedAt });
        });
        await s.waitFor(Promise.all(tasks));

        const storedBefore = (marker: string): Set<string> => {
          const ids = new Set<string>();
          for (const label of issued) {
            if (label === marker) return ids;
            if (label.startsWith('ingest '))
              for (const id of label.slice(7).split(',')) ids.add(id);
          }
          throw new Error(`${marker} never happened: ${issued.join(' | ')}`);
        };
        const counted = new Set<string>();
        for (let j = 0; j < clients; j++) {
          for (const id of storedBefore(`count ${j}`)) counted.add(id);
        }
        const final = (await plain.badge(USER)).counters?.[KIND] ?? 0;
        // Exactly the events no badge counted: a read clears what its badge showed, and never
        // one it missed, in every interleaving (the events of before the race included).
        expect(final, issued.join(' | ')).toBe(fresh.filter((id) => !counted.has(id)).length);
        if (engine === 'memory') await store.close();
      }),
      { numRuns: RUNS[engine] },
    );
  });

  it('an event stored in the same millisecond as the badge of a user with no counter state survives a read up to that badge', async () => {
    // The count of a user without state writes nothing, so the first stamp must be after now
    // by itself. Memory: a frozen clock makes every call share one millisecond; Redis: back to
    // back calls mostly do.
    const frozen = { now: () => T0 };
    for (let round = 0; round < (engine === 'memory' ? 1 : 20); round++) {
      const store =
        engine === 'memory'
          ? new MemoryStore({ pools: TEST_POOLS, now: frozen.now })
          : ctx().freshStore();
      const clock = engine === 'memory' ? frozen : { now: () => Date.now() };
      const service = new BadgeService(store, clock);
      const user = `same-ms-${round}`;
      const shown = await service.badge(user);
      expect(shown.counters?.[KIND] ?? 0).toBe(0);
      await service.ingestCounterEvents([{ user, kind: KIND, id: 'e' }]);
      await service.read(user, { scope: 'counter', kind: KIND, upTo: shown.computedAt });
      expect((await service.badge(user)).counters?.[KIND], `round ${round}`).toBe(1);
      if (engine === 'memory') await store.close();
    }
  });

  it('a read without upTo clears every event stored before it, and none stored after', async () => {
    await fc.assert(
      fc.asyncProperty(fc.scheduler(), fc.integer({ min: 1, max: 4 }), async (s, k) => {
        const store = ctx().freshStore();
        await loadCounterScripts(store);
        const issued: string[] = [];
        const service = new BadgeService(
          scheduledStore(store, s, issued, { current: -1 }),
          store.clock,
        );
        const ids = Array.from({ length: k }, (_, i) => `e${i}`);
        const tasks = [
          ...ids.map((id) => service.ingestCounterEvents([{ user: USER, kind: KIND, id }])),
          service.read(USER, { scope: 'counter', kind: KIND }),
        ];
        await s.waitFor(Promise.all(tasks));
        const readAt = issued.findIndex((label) => label.startsWith('read'));
        const after = issued.slice(readAt).filter((label) => label.startsWith('ingest')).length;
        const final = (await new BadgeService(store, store.clock).badge(USER)).counters?.[KIND];
        expect(final ?? 0, issued.join(' | ')).toBe(after);
      }),
      { numRuns: RUNS[engine] },
    );
  });
});
