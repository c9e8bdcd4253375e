/**
 * Follow changes and fetches of one user's sources against their brute-force definition
 * (docs/semantics.md, "Where a user's sources live"): set operations, stored for a user held,
 * dropped for a user not held, and for a fetch in flight applied on top of the answer at its
 * install. A second property races changes of distinct ids with the install: none is lost,
 * whichever comes first. On the memory engine, one redis-server and a 3-master Redis Cluster.
 */
import { MemoryStore, RedisStore, type BubbleStore, type FollowOutcome } from '@bubble/store';
import { startRedisServer, uniquePrefix, type RedisServerHandle } from '@bubble/test-utils';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useRedisCluster } from '../support/redis-cluster.js';
import { sorted } from '../support/store-contract.js';

type Kind = 'follows' | 'topics';
const IDS: Record<Kind, string[]> = {
  follows: ['a0', 'a1', 'a2', 'a3', 'a4'],
  topics: ['t0', 't1', 't2'],
};
/** Above every list the ids can make: the cap never binds here (the contract tests check it). */
const CAPS = { follows: 10, topics: 10 };
const TTL = 60_000;

type Op =
  | { op: 'follow' | 'unfollow'; kind: Kind; id: string }
  | { op: 'replace'; kind: Kind; ids: string[] }
  | { op: 'begin' }
  | { op: 'install'; follows: string[]; topics: string[] };

const kind = fc.constantFrom<Kind>('follows', 'topics');
const idsOf = (k: Kind) => fc.uniqueArray(fc.constantFrom(...IDS[k]), { maxLength: IDS[k].length });
const change = kind.chain((k) =>
  fc.record({
    op: fc.constantFrom('follow' as const, 'unfollow' as const),
    kind: fc.constant(k),
    id: fc.constantFrom(...IDS[k]),
  }),
);
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: change },
  {
    weight: 1,
    arbitrary: kind.chain((k) =>
      fc.record({ op: fc.constant('replace' as const), kind: fc.constant(k), ids: idsOf(k) }),
    ),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('begin' as const) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('install' as const),
      follows: idsOf('follows'),
      topics: idsOf('topics'),
    }),
  },
);

/** The definition: a user's lists, whether held, whether a fetch is in flight and its changes. */
class Model {
  held = false;
  fetching = false;
  lists: Record<Kind, Set<string>> = { follows: new Set(), topics: new Set() };
  private pending: Op[] = [];

  /** What the store answers for `op`. */
  apply(op: Op): FollowOutcome | boolean | undefined {
    if (op.op === 'begin') {
      if (!this.held) this.fetching = true;
      return undefined;
    }
    if (op.op === 'install') {
      if (!this.held) {
        this.lists = { follows: new Set(op.follows), topics: new Set(op.topics) };
        this.held = true;
        for (const change of this.pending) this.change(change);
      }
      this.pending = [];
      this.fetching = false;
      return undefined;
    }
    if (!this.held && !this.fetching) return op.op === 'follow' ? 'not-held' : false;
    if (!this.held) {
      this.pending.push(op);
      return op.op === 'follow' ? 'recorded' : true;
    }
    return this.change(op);
  }

  private change(op: Op): FollowOutcome | boolean {
    if (op.op === 'replace') {
      this.lists[op.kind] = new Set(op.ids);
      return true;
    }
    if (op.op === 'follow') {
      const list = this.lists[op.kind];
      return list.has(op.id) ? 'exists' : (list.add(op.id), 'added');
    }
    if (op.op === 'unfollow') return this.lists[op.kind].delete(op.id);
    throw new Error(`not a change: ${op.op}`);
  }
}

async function run(
  store: BubbleStore,
  u: string,
  op: Op,
): Promise<FollowOutcome | boolean | undefined> {
  switch (op.op) {
    case 'begin':
      return void (await store.sources.beginFetch([u], TTL));
    case 'install':
      return void (await store.sources.install(
        [{ user: u, answer: { follows: op.follows, topics: op.topics } }],
        CAPS,
      ));
    case 'follow':
      return store[op.kind].follow(u, op.id, CAPS[op.kind]);
    case 'unfollow':
      return store[op.kind].unfollow(u, op.id);
    case 'replace':
      return store[op.kind].replace(u, op.ids);
  }
}

/** A store and a user of it nothing was done to yet: what one run starts from. */
type FreshUser = () => { store: BubbleStore; u: string };

function sequenceProperty(make: () => FreshUser, numRuns: number): () => Promise<void> {
  return async () => {
    const fresh = make();
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { maxLength: 30 }), async (ops) => {
        const { store, u } = fresh();
        const model = new Model();
        for (const [step, op] of ops.entries()) {
          expect(await run(store, u, op), `step ${step} ${JSON.stringify(op)}`).toEqual(
            model.apply(op),
          );
          const inputs = await store.feedInputs(u);
          expect({
            ...inputs,
            follows: sorted(inputs.follows),
            topics: sorted(inputs.topics),
          }).toEqual({
            follows: model.held ? sorted([...model.lists.follows]) : [],
            topics: model.held ? sorted([...model.lists.topics]) : [],
            readAt: null,
            held: model.held,
          });
        }
      }),
      { numRuns },
    );
  };
}

/** Distinct ids, each followed or unfollowed once, sent together with the install. */
const raceArb = fc.record({
  answer: fc.record({ follows: idsOf('follows'), topics: idsOf('topics') }),
  changes: fc.tuple(
    fc
      .shuffledSubarray(IDS.follows)
      .chain((ids) =>
        fc.tuple(...ids.map((id) => fc.record({ id: fc.constant(id), add: fc.boolean() }))),
      ),
    fc
      .shuffledSubarray(IDS.topics)
      .chain((ids) =>
        fc.tuple(...ids.map((id) => fc.record({ id: fc.constant(id), add: fc.boolean() }))),
      ),
  ),
  installAt: fc.nat(8),
});

function raceProperty(make: () => FreshUser, numRuns: number): () => Promise<void> {
  return async () => {
    const fresh = make();
    await fc.assert(
      fc.asyncProperty(raceArb, async ({ answer, changes: [follows, topics], installAt }) => {
        const { store, u } = fresh();
        await store.sources.beginFetch([u], TTL);
        const sends: Promise<unknown>[] = [];
        const changes = [
          ...follows.map((c) => ({ ...c, kind: 'follows' as const })),
          ...topics.map((c) => ({ ...c, kind: 'topics' as const })),
        ];
        const install = () => sends.push(store.sources.install([{ user: u, answer }], CAPS));
        for (const [i, { kind, id, add }] of changes.entries()) {
          if (i === installAt) install();
          sends.push(add ? store[kind].follow(u, id, CAPS[kind]) : store[kind].unfollow(u, id));
        }
        if (installAt >= changes.length) install();
        await Promise.all(sends);
        const expected = (k: Kind, base: string[], list: { id: string; add: boolean }[]) => {
          const set = new Set(base);
          for (const { id, add } of list) {
            if (add) set.add(id);
            else set.delete(id);
          }
          return sorted([...set]);
        };
        const inputs = await store.feedInputs(u);
        expect(inputs.held).toBe(true);
        expect(sorted(inputs.follows)).toEqual(expected('follows', answer.follows, follows));
        expect(sorted(inputs.topics)).toEqual(expected('topics', answer.topics, topics));
      }),
      { numRuns },
    );
  };
}

/** A user id per run on one store (a store per run would each watch the shared client). */
function usersOn(store: BubbleStore): FreshUser {
  let runs = 0;
  return () => ({ store, u: `u${++runs}` });
}

describe('user sources against the definition [memory]', () => {
  const memory = () => () => ({
    store: new MemoryStore({ pools: 16, sourcesOnDemand: true }),
    u: 'u',
  });
  it('random follow changes, fetches and installs', sequenceProperty(memory, 300));
  it('changes racing the install are all applied', raceProperty(memory, 200));
});

describe('user sources against the definition [redis]', () => {
  let server: RedisServerHandle | undefined;
  const stores: BubbleStore[] = [];
  beforeAll(async () => {
    server = await startRedisServer();
  });
  afterAll(async () => {
    await Promise.all(stores.splice(0).map((store) => store.close()));
    await server?.stop();
  });
  const redis = () => {
    const store = new RedisStore({
      url: server!.url,
      keyPrefix: uniquePrefix('src'),
      pools: 16,
      sourcesOnDemand: true,
    });
    stores.push(store);
    return usersOn(store);
  };
  it('random follow changes, fetches and installs', sequenceProperty(redis, 60), 120_000);
  it('changes racing the install are all applied', raceProperty(redis, 60), 120_000);
});

describe('user sources against the definition [redis cluster]', () => {
  const cluster = useRedisCluster();
  const onCluster = () =>
    usersOn(
      new RedisStore({
        client: cluster.client,
        keyPrefix: uniquePrefix('src'),
        pools: 16,
        sourcesOnDemand: true,
      }),
    );
  it('random follow changes, fetches and installs', sequenceProperty(onCluster, 20), 240_000);
  it('changes racing the install are all applied', raceProperty(onCluster, 20), 240_000);
});
