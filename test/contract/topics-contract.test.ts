/**
 * Topic follows and posts with topics (docs/semantics.md, "Topics"), through BadgeService on
 * each engine: the memory engine, one redis-server and a real 3-master Redis Cluster, with the
 * very same assertions. The cold start's feed is compared with the brute-force definition.
 */
import {
  BubbleError,
  DAY_MS,
  ManualClock,
  MINUTE_MS,
  mulberry32,
  systemClock,
} from '@bubble/protocol';
import { BadgeService } from '@bubble/badges';
import { MemoryStore, RedisStore, type BubbleStore, type Post } from '@bubble/store';
import {
  startRedisCluster,
  startRedisServer,
  uniquePrefix,
  waitFor,
  type RedisClusterHandle,
  type RedisServerHandle,
} from '@bubble/test-utils';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { feedCount } from '../support/feed-definition.js';
import { T0, TEST_POOLS } from '../support/engines.js';
import { startSoloCore } from '../support/solo-core.js';

type Target = 'memory' | 'redis' | 'redis cluster';

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'resolved';
  } catch (error) {
    return error instanceof BubbleError ? error.code : String(error);
  }
}

for (const target of ['memory', 'redis', 'redis cluster'] as const satisfies readonly Target[]) {
  describe(`topics [${target}]`, () => {
    let server: RedisServerHandle | undefined;
    let cluster: RedisClusterHandle | undefined;
    const stores: BubbleStore[] = [];

    beforeAll(async () => {
      if (target === 'redis') server = await startRedisServer();
      if (target === 'redis cluster') cluster = await startRedisCluster({ masters: 3 });
    }, 60_000);
    afterAll(async () => {
      await Promise.all(stores.splice(0).map((store) => store.close()));
      await server?.stop();
      await cluster?.stop();
    });

    function fresh(topicCap = 3): {
      service: BadgeService;
      clock: ManualClock;
      store: BubbleStore;
    } {
      let store: BubbleStore;
      if (target === 'memory') store = new MemoryStore({ pools: TEST_POOLS });
      else if (target === 'redis')
        store = new RedisStore({ url: server!.url, keyPrefix: uniquePrefix(), pools: TEST_POOLS });
      else
        store = new RedisStore({
          clusterNodes: cluster!.nodes.map((n) => `${n.host}:${n.port}`),
          keyPrefix: uniquePrefix(),
          pools: TEST_POOLS,
        });
      stores.push(store);
      const clock = new ManualClock(T0);
      return { service: new BadgeService(store, clock, { topicCap }), clock, store };
    }

    it('follows, unfollows, replaces and lists topics; the cap is 409 UB_ERR_FOLLOW_CAP', async () => {
      const { service } = fresh(3);
      await service.followTopic('u1', 'cats');
      await service.followTopic('u1', 'cats');
      await service.followTopic('u1', 'dogs');
      expect(await service.listTopics('u1')).toEqual(['cats', 'dogs']);
      await service.followTopic('u1', 'owls');
      const error = await service.followTopic('u1', 'bats').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(BubbleError);
      expect((error as BubbleError).code).toBe('UB_ERR_FOLLOW_CAP');
      expect((error as BubbleError).status).toBe(409);
      expect(await service.listTopics('u1')).toEqual(['cats', 'dogs', 'owls']);
      await service.unfollowTopic('u1', 'dogs');
      await service.unfollowTopic('u1', 'never');
      expect(await service.listTopics('u1')).toEqual(['cats', 'owls']);
      expect(await codeOf(service.replaceTopics('u1', ['a', 'b', 'c', 'd']))).toBe(
        'UB_ERR_FOLLOW_CAP',
      );
      expect(await service.listTopics('u1')).toEqual(['cats', 'owls']);
      await service.replaceTopics('u1', ['x', 'x', 'y']);
      expect(await service.listTopics('u1')).toEqual(['x', 'y']);
      await service.replaceTopics('u1', []);
      expect(await service.listTopics('u1')).toEqual([]);
      expect(await codeOf(service.followTopic('u1', 'bad topic'))).toBe('UB_ERR_BAD_ID');
      // Topics and authors are separate sets: the author cap is not the topic cap.
      expect(await service.listFollows('u1')).toEqual([]);
    });

    it('a post reaching a user through its author and several topics counts once', async () => {
      const { service, clock } = fresh(10);
      await service.follow('u1', 'alice');
      await service.replaceTopics('u1', ['cats', 'dogs']);
      await service.ingestPosts([
        { author: 'alice', id: 'p1', ts: T0 - 3 * MINUTE_MS, topics: ['cats', 'dogs'] },
        { author: 'bob', id: 'p2', ts: T0 - 2 * MINUTE_MS, topics: ['dogs', 'cats', 'owls'] },
        { author: 'bob', id: 'p3', ts: T0 - 2 * MINUTE_MS, topics: ['owls'] },
        { author: 'carol', id: 'p4', ts: T0 - MINUTE_MS, topics: ['cats'] },
        { author: 'alice', id: 'p5', ts: T0 - MINUTE_MS },
      ]);
      expect(await service.computeFeed('u1', clock.now())).toBe(4);
      const explained = await service.explain('u1');
      expect(explained.feed).toMatchObject({
        topics: ['cats', 'dogs'],
        byAuthors: 2,
        byTopicsOnly: 2,
        contribution: 4,
      });
      // Nobody else is reached: bob's followers-of-nothing, a user following only owls.
      await service.followTopic('u2', 'owls');
      expect(await service.computeFeed('u2', clock.now())).toBe(2);
    });

    it("a post's topics are those of its first stored ingest; a delete leaves its topic windows", async () => {
      const { service, clock, store } = fresh(10);
      await service.followTopic('u1', 'cats');
      await service.followTopic('u2', 'dogs');
      const post: Post = { author: 'bob', id: 'p1', ts: T0 - MINUTE_MS, topics: ['cats'] };
      await service.ingestPosts([post]);
      await service.ingestPosts([{ ...post, topics: ['dogs'] }]);
      await service.ingestPosts([{ ...post, topics: undefined }]);
      expect(await service.computeFeed('u1', clock.now())).toBe(1);
      expect(await service.computeFeed('u2', clock.now())).toBe(0);
      const window = await store.posts.topicWindow(['cats', 'dogs'], T0 - DAY_MS);
      expect(window.get('cats')).toEqual([
        { author: 'bob', id: 'p1', ts: T0 - MINUTE_MS, topics: ['cats'] },
      ]);
      expect(window.get('dogs')).toEqual([]);
      await service.deletePost('bob', 'p1');
      await service.deletePost('bob', 'p1');
      expect(await service.computeFeed('u1', clock.now())).toBe(0);
      expect((await store.posts.topicWindow(['cats'], T0 - DAY_MS)).get('cats')).toEqual([]);
      // A deleted post does not come back, with or without topics.
      await service.ingestPosts([post]);
      expect(await service.computeFeed('u1', clock.now())).toBe(0);
      const events = await store.changes.readPostEvents('0-0', 100);
      expect(events.entries.map((e) => e.event)).toEqual([
        { kind: 'post', author: 'bob', id: 'p1', ts: T0 - MINUTE_MS, topics: ['cats'] },
        { kind: 'delete', author: 'bob', id: 'p1', ts: T0 - MINUTE_MS },
      ]);
    });

    it('posts older than the lookback are ignored; topics of a batch repeat-free', async () => {
      const { service, clock } = fresh(10);
      await service.followTopic('u1', 'cats');
      const result = await service.ingestPosts([
        { author: 'bob', id: 'old', ts: T0 - 8 * DAY_MS, topics: ['cats'] },
        { author: 'bob', id: 'new', ts: T0 - DAY_MS, topics: ['cats', 'cats'] },
      ]);
      expect(result).toEqual({ accepted: 1, ignored: 1 });
      expect(await service.computeFeed('u1', clock.now())).toBe(1);
      clock.advance(6 * DAY_MS + MINUTE_MS);
      expect(await service.computeFeed('u1', clock.now())).toBe(0);
      expect(
        await codeOf(
          service.ingestPosts([
            {
              author: 'bob',
              id: 'many',
              ts: T0,
              topics: Array.from({ length: 11 }, (_, i) => `t${i}`),
            },
          ]),
        ),
      ).toBe('UB_ERR_BAD_REQUEST');
    });

    it("the core counts a held user's topic posts once and follows topic changes at the next sweep", async () => {
      const { store } = fresh(10);
      const service = new BadgeService(store, systemClock, { topicCap: 10 });
      const core = await startSoloCore(store, { id: 'core-topics', reconcilePerSweep: 0 });
      const storedFeed = async () => {
        const stored = await store.badges.load('alice');
        return stored?.fields.f ?? 0;
      };
      const settle = async (feed: number, message: string) =>
        waitFor(
          async () => {
            await core.sweepNow();
            return (await storedFeed()) === feed;
          },
          { timeoutMs: 20_000, message },
        );
      try {
        const now = Date.now();
        await service.follow('alice', 'bob');
        await service.followTopic('alice', 'cats');
        await service.ingestPosts([
          { author: 'bob', id: 'b1', ts: now - 5000, topics: ['cats', 'dogs'] },
          { author: 'carl', id: 'c1', ts: now - 4000, topics: ['dogs', 'cats'] },
          { author: 'carl', id: 'c2', ts: now - 3000, topics: ['dogs'] },
        ]);
        await service.setPresence('alice', true, 3_600_000);
        await settle(2, 'the loaded user never counted 2');
        await service.followTopic('alice', 'dogs');
        await settle(3, 'a topic follow never reached the core');
        await service.ingestPosts([
          { author: 'bob', id: 'b2', ts: Date.now() - 1000, topics: ['dogs', 'cats'] },
          { author: 'dana', id: 'd1', ts: Date.now() - 1000, topics: ['cats', 'dogs'] },
        ]);
        await settle(5, 'new topic posts were not counted once each');
        await service.deletePost('dana', 'd1');
        await settle(4, 'a deleted topic post kept counting');
        await service.replaceTopics('alice', []);
        await settle(2, 'a replace of the topics never reached the core');
        expect(await service.computeFeed('alice', Date.now())).toBe(2);
      } finally {
        await core.close();
      }
    }, 60_000);

    it('the cold start equals the definition over random follows, topics, posts and deletes', async () => {
      const { service, clock } = fresh(10);
      const random = mulberry32(18);
      const pick = (n: number) => Math.floor(random() * n);
      const users = ['u0', 'u1', 'u2', 'u3'];
      const authors = ['a0', 'a1', 'a2', 'a3', 'a4'];
      const topics = ['t0', 't1', 't2', 't3'];
      const follows = new Map(users.map((u) => [u, new Set<string>()]));
      const followedTopics = new Map(users.map((u) => [u, new Set<string>()]));
      const posts = new Map<string, { author: string; ts: number; topics: string[] }>();
      const deleted = new Set<string>();
      for (let step = 0; step < 120; step++) {
        const user = users[pick(users.length)]!;
        const action = pick(10);
        if (action < 2) {
          const author = authors[pick(authors.length)]!;
          await service.follow(user, author);
          follows.get(user)!.add(author);
        } else if (action < 4) {
          const topic = topics[pick(topics.length)]!;
          if (pick(3) === 0) {
            await service.unfollowTopic(user, topic);
            followedTopics.get(user)!.delete(topic);
          } else {
            await service.followTopic(user, topic);
            followedTopics.get(user)!.add(topic);
          }
        } else if (action < 5) {
          const chosen = topics.filter(() => pick(2) === 0);
          await service.replaceTopics(user, chosen);
          followedTopics.set(user, new Set(chosen));
        } else if (action < 9) {
          const author = authors[pick(authors.length)]!;
          const id = `p${pick(40)}`;
          const postTopics = topics.filter(() => pick(3) === 0);
          const ts = clock.now() - pick(3 * DAY_MS);
          await service.ingestPosts([{ author, id, ts, topics: postTopics }]);
          const key = `${author}/${id}`;
          if (!posts.has(key) && !deleted.has(key))
            posts.set(key, { author, ts, topics: postTopics });
        } else {
          const [key] = [...posts.keys()].slice(pick(Math.max(1, posts.size)));
          if (key) {
            const [author, id] = key.split('/') as [string, string];
            await service.deletePost(author, id);
            deleted.add(key);
          }
        }
        if (step % 10 === 9) clock.advance(pick(DAY_MS));
      }
      for (const user of users) {
        const expected = feedCount(
          posts,
          deleted,
          follows.get(user)!,
          undefined,
          clock.now(),
          followedTopics.get(user)!,
        );
        expect(await service.computeFeed(user, clock.now()), user).toBe(expected);
      }
    }, 60_000);
  });
}
