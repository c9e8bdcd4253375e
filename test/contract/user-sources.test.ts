/**
 * Where a user's sources live (docs/semantics.md; packages/store/src/follows/user-sources.ts), on
 * the memory engine, one redis-server and a 3-master Redis Cluster: whether a user's follows are
 * held, follow changes of a user not held (nothing stored), changes during a fetch in flight
 * (applied on top of the answer, whichever came first), the install of an answer (a held user
 * keeps what it holds; readAt and noticesSeen only where unset), and the fetch marker's ttl.
 */
import { ManualClock } from '@bubble/protocol';
import { MemoryStore, RedisStore, type BubbleStore } from '@bubble/store';
import {
  startRedisCluster,
  startRedisServer,
  uniquePrefix,
  waitFor,
  type RedisClusterHandle,
  type RedisServerHandle,
} from '@bubble/test-utils';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { T0, TEST_POOLS } from '../support/engines.js';
import { expectBubbleError, sorted } from '../support/store-contract.js';

type Target = 'memory' | 'redis' | 'redis cluster';

const CAPS = { follows: 5, topics: 3 };
const TTL = 60_000;

/** What the store holds of `user`'s sources: 'follows', 'topics', 'fetch' (as heldFor names them). */
async function sourcesStored(store: BubbleStore, user: string): Promise<string[]> {
  if (store instanceof MemoryStore) {
    return store.heldFor(user).filter((part) => ['follows', 'topics', 'fetch'].includes(part));
  }
  const { redis, keys } = store as RedisStore;
  const named: [string, string][] = [
    ['follows', keys.follows(user)],
    ['topics', keys.topics(user)],
    ['fetch', keys.sourcesFetch(user)],
  ];
  const found = await Promise.all(named.map(([, key]) => redis.exists(key)));
  return named.filter((_, i) => found[i] === 1).map(([name]) => name);
}

for (const target of ['memory', 'redis', 'redis cluster'] as const satisfies readonly Target[]) {
  describe(`user sources [${target}]`, () => {
    let server: RedisServerHandle | undefined;
    let cluster: RedisClusterHandle | undefined;
    const stores: BubbleStore[] = [];

    beforeAll(async () => {
      if (target === 'redis') server = await startRedisServer();
      if (target === 'redis cluster') cluster = await startRedisCluster({ masters: 3 });
    }, 60_000);
    afterEach(async () => {
      await Promise.all(stores.splice(0).map((store) => store.close()));
    });
    afterAll(async () => {
      await server?.stop();
      await cluster?.stop();
    });

    /** A fresh store; `now` (memory only) is its clock, which the fetch marker's ttl runs on. */
    function fresh(sourcesOnDemand = true, now?: () => number): BubbleStore {
      let store: BubbleStore;
      if (target === 'memory') store = new MemoryStore({ pools: TEST_POOLS, sourcesOnDemand, now });
      else
        store = new RedisStore({
          ...(target === 'redis'
            ? { url: server!.url }
            : { clusterNodes: cluster!.nodes.map((n) => `${n.host}:${n.port}`) }),
          keyPrefix: uniquePrefix(),
          pools: TEST_POOLS,
          sourcesOnDemand,
        });
      stores.push(store);
      return store;
    }

    it('without an endpoint every user is held, changes store as before, install keeps what is held', async () => {
      const store = fresh(false);
      expect(store.sources.onDemand).toBe(false);
      expect(await store.sources.held(['u', 'never'])).toEqual([true, true]);
      expect(await store.follows.follow('u', 'a', 5)).toBe('added');
      expect(await store.topics.follow('u', 'cats', 3)).toBe('added');
      await store.sources.beginFetch(['u', 'never'], TTL);
      const installed = await store.sources.install(
        [
          { user: 'u', answer: { follows: ['x'], topics: [], readAt: T0 } },
          { user: 'never', answer: { follows: ['y'], topics: ['owls'], noticesSeen: 4 } },
        ],
        CAPS,
      );
      expect(installed).toEqual([
        { follows: ['a'], topics: ['cats'], readAt: null, held: true },
        { follows: [], topics: [], readAt: null, held: true },
      ]);
      expect(await store.marks.state('never')).toMatchObject({ seen: null });
      // An emptied list is deleted, as before: nothing is kept for a user following nobody.
      expect(await store.follows.unfollow('u', 'a')).toBe(true);
      expect(await store.topics.replace('u', [])).toBe(true);
      expect(await sourcesStored(store, 'u')).toEqual([]);
      expect(await store.feedInputs('u')).toEqual({
        follows: [],
        topics: [],
        readAt: null,
        held: true,
      });
    });

    it('a change of a user not held, with no fetch in flight, stores nothing', async () => {
      const store = fresh();
      expect(store.sources.onDemand).toBe(true);
      expect(await store.sources.held(['u'])).toEqual([false]);
      expect(await store.follows.follow('u', 'a', 5)).toBe('not-held');
      expect(await store.topics.follow('u', 'cats', 3)).toBe('not-held');
      expect(await store.follows.unfollow('u', 'a')).toBe(false);
      expect(await store.topics.unfollow('u', 'cats')).toBe(false);
      expect(await store.follows.replace('u', ['a', 'b'])).toBe(false);
      expect(await store.topics.replace('u', ['cats'])).toBe(false);
      expect(await sourcesStored(store, 'u')).toEqual([]);
      expect(await store.follows.list('u')).toEqual([]);
      expect(await store.feedInputs('u')).toEqual({
        follows: [],
        topics: [],
        readAt: null,
        held: false,
      });
      const [inputs] = await store.userInputs(['u'], { kinds: [], windowMs: 1000 });
      expect(inputs!.feed.held).toBe(false);
    });

    it('install stores the answer, readAt and noticesSeen where unset; the user is held, following nobody included', async () => {
      const store = fresh();
      await store.cursors.advanceFeedReadAt('hasCursors', T0 + 9);
      await store.marks.advanceSeen('hasCursors', 9);
      const installed = await store.sources.install(
        [
          {
            user: 'u',
            answer: { follows: ['a', 'b'], topics: ['cats'], readAt: T0, noticesSeen: 3 },
          },
          { user: 'nobody', answer: { follows: [], topics: [] } },
          {
            user: 'hasCursors',
            answer: { follows: ['a'], topics: [], readAt: T0, noticesSeen: 2 },
          },
        ],
        CAPS,
      );
      expect(installed).toEqual([
        { follows: ['a', 'b'], topics: ['cats'], readAt: T0, held: true },
        { follows: [], topics: [], readAt: null, held: true },
        { follows: ['a'], topics: [], readAt: T0 + 9, held: true },
      ]);
      expect(await store.sources.held(['u', 'nobody', 'hasCursors', 'other'])).toEqual([
        true,
        true,
        true,
        false,
      ]);
      expect(await store.marks.state('u')).toMatchObject({ seen: 3 });
      expect(await store.marks.state('nobody')).toMatchObject({ seen: null });
      expect(await store.marks.state('hasCursors')).toMatchObject({ seen: 9 });
      expect(await store.cursors.feedReadAt('nobody')).toBeNull();
      expect(await sourcesStored(store, 'nobody')).toEqual(['follows']);
      for (const user of ['u', 'nobody', 'hasCursors']) {
        expect(await store.feedInputs(user)).toEqual(
          installed[['u', 'nobody', 'hasCursors'].indexOf(user)],
        );
      }
      const inputs = await store.userInputs(['u', 'nobody', 'other'], {
        kinds: [],
        windowMs: 1000,
      });
      expect(inputs.map((i) => i.feed)).toEqual([
        installed[0],
        installed[1],
        { follows: [], topics: [], readAt: null, held: false },
      ]);
      // Held now: changes store, and the authors list stays when emptied (still held).
      expect(await store.follows.follow('nobody', 'z', 5)).toBe('added');
      expect(await store.follows.unfollow('nobody', 'z')).toBe(true);
      expect(await store.topics.follow('nobody', 'dogs', 3)).toBe('added');
      expect(await store.topics.unfollow('nobody', 'dogs')).toBe(true);
      expect(await sourcesStored(store, 'nobody')).toEqual(['follows']);
      expect(await store.sources.held(['nobody'])).toEqual([true]);
      expect(await store.follows.replace('u', [])).toBe(true);
      expect(await store.sources.held(['u'])).toEqual([true]);
      expect(await store.follows.list('u')).toEqual([]);
    });

    it('an install for a user held already keeps what it holds, its cursors too', async () => {
      const store = fresh();
      await store.sources.install(
        [{ user: 'u', answer: { follows: ['a'], topics: ['cats'] } }],
        CAPS,
      );
      expect(await store.follows.follow('u', 'b', 5)).toBe('added');
      await store.sources.beginFetch(['u'], TTL);
      expect(await sourcesStored(store, 'u')).toEqual(['follows', 'topics']);
      const [again] = await store.sources.install(
        [{ user: 'u', answer: { follows: ['x'], topics: [], readAt: T0, noticesSeen: 5 } }],
        CAPS,
      );
      expect(again).toEqual({ follows: ['a', 'b'], topics: ['cats'], readAt: null, held: true });
      expect(await store.marks.state('u')).toMatchObject({ seen: null });
    });

    it('changes during a fetch are recorded and applied on top of the answer', async () => {
      const store = fresh();
      await store.sources.beginFetch(['u', 'v'], TTL);
      expect(await store.sources.held(['u'])).toEqual([false]);
      expect(await store.follows.follow('u', 'new', 5)).toBe('recorded');
      expect(await store.follows.follow('u', 'new', 5)).toBe('recorded');
      expect(await store.follows.unfollow('u', 'gone')).toBe(true);
      expect(await store.follows.follow('u', 'flip', 5)).toBe('recorded');
      expect(await store.follows.unfollow('u', 'flip')).toBe(true);
      expect(await store.topics.follow('u', 'owls', 3)).toBe('recorded');
      expect(await store.topics.unfollow('u', 'cats')).toBe(true);
      // A replace stands in for the answer's list of its kind; later changes go on top of it.
      expect(await store.topics.replace('v', ['bats', 'rats'])).toBe(true);
      expect(await store.topics.unfollow('v', 'rats')).toBe(true);
      expect(await store.follows.list('u')).toEqual([]);
      expect(await sourcesStored(store, 'u')).toEqual(['fetch']);
      const installed = await store.sources.install(
        [
          { user: 'u', answer: { follows: ['a', 'gone', 'flip'], topics: ['cats', 'dogs'] } },
          { user: 'v', answer: { follows: ['a'], topics: ['cats'] } },
        ],
        CAPS,
      );
      expect(installed).toEqual([
        { follows: ['a', 'new'], topics: ['dogs', 'owls'], readAt: null, held: true },
        { follows: ['a'], topics: ['bats'], readAt: null, held: true },
      ]);
      expect(await sourcesStored(store, 'u')).toEqual(['follows', 'topics']);
      // The marker is gone: changes now go to the lists.
      expect(await store.follows.follow('u', 'later', 5)).toBe('added');
      expect(await store.follows.list('u')).toEqual(['a', 'new', 'later']);
    });

    it('an answer installed before the change: the change goes to the held lists, nothing lost', async () => {
      const store = fresh();
      await store.sources.beginFetch(['u'], TTL);
      await store.sources.install([{ user: 'u', answer: { follows: ['a'], topics: [] } }], CAPS);
      expect(await store.follows.follow('u', 'b', 5)).toBe('added');
      expect(await store.follows.unfollow('u', 'a')).toBe(true);
      expect(await store.follows.list('u')).toEqual(['b']);
    });

    it('recorded follows respect the cap at install, in the order they came, after the removals', async () => {
      const store = fresh();
      await store.sources.beginFetch(['u', 'v'], TTL);
      for (const author of ['n1', 'n2', 'n3']) await store.follows.follow('u', author, 5);
      await store.follows.unfollow('u', 'a1');
      await store.follows.follow('v', 'n1', 5);
      const [u, v] = await store.sources.install(
        [
          { user: 'u', answer: { follows: ['a1', 'a2', 'a3', 'a4'], topics: [] } },
          { user: 'v', answer: { follows: ['a1', 'a2', 'a3', 'a4', 'a5'], topics: [] } },
        ],
        CAPS,
      );
      expect(u!.follows).toEqual(['a2', 'a3', 'a4', 'n1', 'n2']);
      expect(v!.follows).toEqual(['a1', 'a2', 'a3', 'a4', 'a5']);
    });

    it('a fetch records at most 2 × cap ids of a kind; a replace records its list whatever came before', async () => {
      const store = fresh();
      await store.sources.beginFetch(['u'], TTL);
      for (let i = 0; i < 4; i++)
        expect(await store.follows.follow('u', `a${i}`, 2)).toBe('recorded');
      await expectBubbleError(store.follows.follow('u', 'a4', 2), 'UB_ERR_FOLLOW_CAP', 409);
      // An id recorded already is not one more; topics have their own bound.
      expect(await store.follows.unfollow('u', 'a0')).toBe(true);
      expect(await store.topics.follow('u', 'cats', 2)).toBe('recorded');
      expect(await store.follows.replace('u', ['r1'])).toBe(true);
      expect(await store.follows.follow('u', 'r2', 2)).toBe('recorded');
      const [installed] = await store.sources.install(
        [{ user: 'u', answer: { follows: ['x', 'y'], topics: [] } }],
        CAPS,
      );
      expect(installed).toMatchObject({ follows: ['r1', 'r2'], topics: ['cats'] });
    });

    it('a second beginFetch keeps what the first recorded; a held user gets no marker', async () => {
      const store = fresh();
      await store.sources.beginFetch(['u'], TTL);
      await store.follows.follow('u', 'b', 5);
      await store.sources.beginFetch(['u'], 10);
      await store.sources.install([{ user: 'h', answer: { follows: [], topics: [] } }], CAPS);
      await store.sources.beginFetch(['h'], TTL);
      expect(await sourcesStored(store, 'h')).toEqual(['follows']);
      expect(await store.follows.follow('h', 'c', 5)).toBe('added');
      const [installed] = await store.sources.install(
        [{ user: 'u', answer: { follows: ['a'], topics: [] } }],
        CAPS,
      );
      expect(installed!.follows).toEqual(['a', 'b']);
    });

    it('the fetch marker lapses after its ttl: changes are dropped again', async () => {
      const clock = new ManualClock(T0);
      const store = fresh(true, () => clock.now());
      const ttl = target === 'memory' ? TTL : 300;
      await store.sources.beginFetch(['u'], ttl);
      expect(await store.follows.follow('u', 'a', 5)).toBe('recorded');
      clock.advance(ttl);
      await waitFor(async () => (await sourcesStored(store, 'u')).length === 0, {
        timeoutMs: 10_000,
      });
      expect(await store.follows.follow('u', 'b', 5)).toBe('not-held');
      const [installed] = await store.sources.install(
        [{ user: 'u', answer: { follows: ['x'], topics: [] } }],
        CAPS,
      );
      expect(installed!.follows).toEqual(['x']);
    });

    it('lists keep their order and survive ids of every character the grammar allows', async () => {
      const store = fresh(false);
      const ids = ['a.b', 'c:d', 'e@f', 'g-h', 'i_j', 'K9', 'x'.repeat(64)];
      for (const id of ids) expect(await store.follows.follow('u', id, 10)).toBe('added');
      expect(await store.follows.follow('u', 'a', 10)).toBe('added');
      expect(await store.follows.follow('u', 'a.b', 10)).toBe('exists');
      expect(await store.follows.unfollow('u', 'a')).toBe(true);
      expect(await store.follows.unfollow('u', 'b')).toBe(false);
      expect(await store.follows.unfollow('u', 'a.')).toBe(false);
      expect(await store.follows.list('u')).toEqual(ids);
      expect(await store.follows.unfollow('u', 'x'.repeat(64))).toBe(true);
      expect(await store.follows.unfollow('u', 'a.b')).toBe(true);
      expect(sorted(await store.follows.list('u'))).toEqual(sorted(ids.slice(1, 6)));
    });
  });
}
