/**
 * The lifecycle with a sources endpoint (docs/semantics.md, "Lifecycle" and "Where a user's
 * sources live"), on both engines: after the inactive-user job a gone user holds nothing under
 * their hash tag `{u:<user>}` (follows, topic follows, cursors, marks: SCAN on Redis, heldFor()
 * on the memory engine), and their next cold start asks the platform again and serves the
 * definition's badge over what it answers then (its readAt standing in for the cursor dropped).
 */
import { DAY_MS, HOUR_MS } from '@bubble/protocol';
import { describe, expect, it } from 'vitest';
import {
  SOURCES_ENGINES,
  askedUsers,
  clientBadge,
  clientCall,
  feedPosts,
  heldUnderUser,
  listedSources,
  platformBadge,
  useSourcesRig,
} from '../http/sources-support.js';

for (const engine of SOURCES_ENGINES) {
  describe(`a gone user with a sources endpoint [${engine}]`, () => {
    const rig = useSourcesRig(engine, 'gone');

    it("holds nothing after the inactive-user job; the next cold start rehydrates to the definition's badge", async () => {
      const app = await rig.start();
      const T0 = app.clock.now();
      app.platform.graph.set('gone', { follows: ['a1'], topics: ['cats'] });
      app.platform.graph.set('stays', { follows: ['a1'], topics: [] });
      app.platform.addPosts([
        { author: 'a1', id: 'p1', ts: T0 - 1000 },
        { author: 'a2', id: 'p2', ts: T0 - 1000, topics: ['cats'] },
      ]);
      await feedPosts(app);
      const first = await clientBadge(app, 'gone');
      expect(first.badge.feed).toBe(2);
      const read = await clientCall(app, 'gone', 'POST', '/v1/badge/read', { scope: 'all' });
      expect(read.status, read.text).toBe(200);
      expect(await heldUnderUser(app.store, 'gone')).not.toEqual([]);

      app.clock.advance(31 * DAY_MS + 2 * HOUR_MS);
      // Seen within the window: kept.
      await clientBadge(app, 'stays');
      expect(await app.service.dropInactiveUsers(100)).toEqual(['gone']);
      expect(await heldUnderUser(app.store, 'gone')).toEqual([]);
      expect(await app.store.sources.held(['gone', 'stays'])).toEqual([false, true]);

      // Meanwhile the platform's graph moved on, and it knows where the user last read.
      const T1 = app.clock.now();
      app.platform.graph.set('gone', {
        follows: ['a1', 'a3'],
        topics: ['cats'],
        readAt: T1 - 2500,
      });
      app.platform.addPosts([
        { author: 'a1', id: 'q1', ts: T1 - 3000 },
        { author: 'a1', id: 'q2', ts: T1 - 2000 },
        { author: 'a3', id: 'q3', ts: T1 - 1000 },
        { author: 'a4', id: 'q4', ts: T1 - 1000, topics: ['cats'] },
        { author: 'a4', id: 'q5', ts: T1 - 1000 },
      ]);
      await feedPosts(
        app,
        [...app.platform.posts.values()].filter((p) => p.id.startsWith('q')),
      );
      app.endpoint.resetRequests();

      const back = await platformBadge(app, 'gone');
      expect(askedUsers(app.endpoint)).toEqual([['gone']]);
      expect({ feed: back.badge.feed, stale: back.stale }).toEqual({
        feed: app.platform.feed('gone', T1),
        stale: false,
      });
      expect(back.badge.feed).toBe(3);
      expect(await listedSources(app, 'gone')).toEqual({ follows: ['a1', 'a3'], topics: ['cats'] });
      expect(askedUsers(app.endpoint)).toEqual([['gone']]);
    });
  });
}
