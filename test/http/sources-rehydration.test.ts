/**
 * Rehydration from the platform's sources endpoint (docs/semantics.md, "Where a user's sources
 * live"; docs/api.md, "Sources endpoint") over real HTTP, on both engines: a user bubble was
 * never told about is fetched before their badge is computed, and the badge is the definition's
 * over the endpoint's graph; afterwards the user is held (no second request); a follow change
 * for a user not held stores nothing; the platform's last-visit positions are used only where
 * bubble holds no cursor; concurrent cold starts are batched, and those of one user share one
 * request.
 */
import { mulberry32 } from '@bubble/protocol';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { idList, randomGraph, randomPosts } from '../support/sources-graph.js';
import {
  SOURCES_ENGINES,
  askedUsers,
  clientBadge,
  clientCall,
  feedPosts,
  heldUnderUser,
  listedSources,
  platformBadge,
  platformOk,
  sortedIds,
  useSourcesRig,
  type SourcesApp,
} from './sources-support.js';

/** Users whose served badge differs from the definition (or is stale), as readable lines. */
async function wrongBadges(app: SourcesApp, users: readonly string[]): Promise<string[]> {
  const T = app.clock.now();
  // Half poll as themselves (seen), half through the platform's route (not seen).
  const served = await Promise.all(
    users.map((user, i) => (i % 2 === 0 ? clientBadge(app, user) : platformBadge(app, user))),
  );
  return users.flatMap((user, i) => {
    const { badge, stale } = served[i]!;
    const expected = app.platform.feed(user, T);
    return badge.feed === expected && !stale
      ? []
      : [`${user}: feed ${badge.feed}${stale ? ' (stale)' : ''}, definition ${expected}`];
  });
}

for (const engine of SOURCES_ENGINES) {
  describe(`rehydration from the sources endpoint [${engine}]`, () => {
    const rig = useSourcesRig(engine, 'rehydrate');

    it("users never told about get the definition's badge over the endpoint's graph, then are held: a second cold start asks nothing", async () => {
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: 1, max: 2 ** 31 - 1 }), async (seed) => {
          const app = await rig.start();
          const rand = mulberry32(seed);
          const T = app.clock.now();
          const users = idList('u', 24);
          const authors = idList('a', 10);
          const topics = idList('t', 4);
          for (const [user, entry] of randomGraph(rand, { users, authors, topics }, T))
            app.platform.graph.set(user, entry);
          app.platform.addPosts(randomPosts(rand, authors, topics, T, 80));
          await feedPosts(app);
          expect(await app.store.sources.held(users)).toEqual(users.map(() => false));

          expect(await wrongBadges(app, users)).toEqual([]);
          // Each user asked for once, whichever batch they fell in.
          expect(sortedIds(askedUsers(app.endpoint).flat())).toEqual(sortedIds(users));
          expect(app.endpoint.requests.every((r) => r.signatureValid)).toBe(true);
          expect(await app.store.sources.held(users)).toEqual(users.map(() => true));

          app.endpoint.resetRequests();
          expect(await wrongBadges(app, users)).toEqual([]);
          expect(app.endpoint.requests).toEqual([]);
        }),
        { numRuns: 4 },
      );
    });

    it('a follow change for a user not held stores nothing and asks nothing; listing their follows fetches and answers the platform’s', async () => {
      const app = await rig.start();
      app.platform.graph.set('x', { follows: ['a1', 'a2'], topics: ['t1'] });
      await platformOk(app, 'PUT', '/v1/users/x/follows/zz');
      await platformOk(app, 'DELETE', '/v1/users/x/follows/a1');
      await platformOk(app, 'PUT', '/v1/users/x/follows', { authors: ['q1', 'q2'] });
      await platformOk(app, 'PUT', '/v1/users/x/topics/tt');
      await platformOk(app, 'DELETE', '/v1/users/x/topics/t1');
      await platformOk(app, 'PUT', '/v1/users/x/topics', { topics: ['q'] });
      expect(app.endpoint.requests).toEqual([]);
      expect(await heldUnderUser(app.store, 'x')).toEqual([]);
      expect(await app.store.sources.held(['x'])).toEqual([false]);

      expect(await listedSources(app, 'x')).toEqual({ follows: ['a1', 'a2'], topics: ['t1'] });
      expect(askedUsers(app.endpoint)).toEqual([['x']]);
      expect(await app.store.sources.held(['x'])).toEqual([true]);
      expect(await heldUnderUser(app.store, 'x')).not.toEqual([]);

      // Held now: a change stores, and no request is made for it.
      await platformOk(app, 'PUT', '/v1/users/x/follows/zz');
      expect((await listedSources(app, 'x')).follows).toEqual(['a1', 'a2', 'zz']);
      expect(app.endpoint.requests).toHaveLength(1);
    });

    it("the platform's readAt and noticesSeen count only where bubble holds no cursor: a user who read, or whose cursors were migrated, keeps theirs", async () => {
      const app = await rig.start();
      const T = app.clock.now();
      const posts = [4000, 3000, 2000, 1000].map((age) => ({
        author: 'a',
        id: `p${age}`,
        ts: T - age,
      }));
      app.platform.addPosts(posts);
      await feedPosts(app);
      for (let id = 1; id <= 5; id++) await platformOk(app, 'POST', '/v1/notices', { id }, 202);
      const platformRead = { follows: ['a'], topics: [], readAt: T - 2500, noticesSeen: 2 };
      for (const user of ['fresh', 'reader', 'migrated'])
        app.platform.graph.set(user, { ...platformRead });

      // Never seen, no cursor: the platform's positions.
      const fresh = await clientBadge(app, 'fresh');
      expect({ feed: fresh.badge.feed, notices: fresh.badge.notices }).toEqual({
        feed: app.platform.feed('fresh', T),
        notices: 3,
      });
      expect(fresh.badge.feed).toBe(2);

      // Read before bubble held their follows: the read's cursor stands (the notice cursor
      // started at their first sight, the highest id).
      const read = await clientCall(app, 'reader', 'POST', '/v1/badge/read', {
        scope: 'feed',
        upTo: T - 3500,
      });
      expect(read.status, read.text).toBe(200);
      const reader = await clientBadge(app, 'reader');
      expect({ feed: reader.badge.feed, notices: reader.badge.notices }).toEqual({
        feed: app.platform.feed('reader', T, T - 3500),
        notices: 0,
      });
      expect(reader.badge.feed).toBe(3);

      // Cursors migrated (POST /v1/cursors) before the first cold start: they stand.
      await platformOk(
        app,
        'POST',
        '/v1/cursors',
        { users: [{ user: 'migrated', feed: T - 3500, notices: 1 }] },
        202,
      );
      const migrated = await clientBadge(app, 'migrated');
      expect({ feed: migrated.badge.feed, notices: migrated.badge.notices }).toEqual({
        feed: 3,
        notices: 4,
      });
      expect(sortedIds(askedUsers(app.endpoint).flat())).toEqual(['fresh', 'migrated', 'reader']);
    });

    it('cold starts arriving together are batched, 100 users a request; those of one user share one request', async () => {
      const app = await rig.start();
      const T = app.clock.now();
      const rand = mulberry32(36);
      const users = idList('m', 250);
      const authors = idList('a', 20);
      for (const [user, entry] of randomGraph(rand, { users, authors, topics: [] }, T))
        app.platform.graph.set(user, entry);
      app.platform.addPosts(randomPosts(rand, authors, [], T, 200));
      await feedPosts(app);

      // The cold starts themselves (what a poll runs), started together: over HTTP, how far
      // apart they arrive is the machine's, not bubble's.
      const served = await Promise.all(users.map((user) => app.service.serveBadge(user)));
      const wrong = users.filter(
        (user, i) => served[i]!.stale || served[i]!.badge.feed !== app.platform.feed(user, T),
      );
      expect(wrong).toEqual([]);
      const asked = askedUsers(app.endpoint);
      expect(sortedIds(asked.flat())).toEqual(sortedIds(users));
      expect(Math.max(...asked.map((batch) => batch.length))).toBeLessThanOrEqual(100);
      expect(asked.length).toBeLessThanOrEqual(Math.ceil(users.length / 100) + 1);

      // Polls of one user over HTTP while their fetch is in flight: one request.
      app.endpoint.resetRequests();
      app.endpoint.setMode({ kind: 'slow', delayMs: 300 });
      app.platform.graph.set('solo', { follows: ['a1'], topics: [] });
      const solo = await Promise.all(Array.from({ length: 20 }, () => platformBadge(app, 'solo')));
      expect(askedUsers(app.endpoint)).toEqual([['solo']]);
      expect(new Set(solo.map(({ badge }) => badge.feed))).toEqual(
        new Set([app.platform.feed('solo', T)]),
      );
    });
  });
}
