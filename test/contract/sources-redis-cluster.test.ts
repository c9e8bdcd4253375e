/**
 * Rehydration from the platform's sources endpoint through a store on a real 3-master Redis
 * Cluster (docs/semantics.md, "Where a user's sources live"): users spread over every shard are
 * fetched in batches that span slots, installed each in its own slot ({u:<user>}), and their
 * badges (cold starts over HTTP, and the batched computation of offline delivery) are the
 * definition's over the endpoint's graph; a follow change racing the fetch is applied on top.
 */
import { mulberry32 } from '@bubble/protocol';
import { waitFor } from '@bubble/test-utils';
import { describe, expect, it } from 'vitest';
import {
  askedUsers,
  feedPosts,
  heldUnderUser,
  listedSources,
  platformBadge,
  platformOk,
  sortedIds,
  useSourcesRig,
} from '../http/sources-support.js';
import { idList, randomGraph, randomPosts } from '../support/sources-graph.js';

describe('rehydration through a 3-master Redis Cluster', () => {
  const rig = useSourcesRig('redis cluster', 'cluster-sources');

  it("users on every shard get the definition's badge over the endpoint's graph, cold or in a batch, and are held afterwards", async () => {
    const app = await rig.start();
    const T = app.clock.now();
    const rand = mulberry32(3636);
    const users = idList('cu', 90);
    const authors = idList('ca', 15);
    const topics = idList('ct', 5);
    for (const [user, entry] of randomGraph(rand, { users, authors, topics }, T))
      app.platform.graph.set(user, entry);
    app.platform.addPosts(randomPosts(rand, authors, topics, T, 150));
    await feedPosts(app);

    const cold = users.slice(0, 60);
    const served = await Promise.all(cold.map((user) => platformBadge(app, user)));
    const wrong = cold.filter(
      (user, i) => served[i]!.stale || served[i]!.badge.feed !== app.platform.feed(user, T),
    );
    expect(wrong).toEqual([]);

    // Offline delivery's batch: those not held yet fetched together, the held ones not again.
    app.endpoint.resetRequests();
    const batch = await app.service.badges(users);
    expect(batch.map((badge) => badge.feed)).toEqual(
      users.map((user) => app.platform.feed(user, T)),
    );
    expect(sortedIds(askedUsers(app.endpoint).flat())).toEqual(sortedIds(users.slice(60)));
    expect(await app.store.sources.held(users)).toEqual(users.map(() => true));

    // The installed sources live under each user's own tag, on whichever shard holds it.
    const entry = [...app.platform.graph].find(([, e]) => e.follows.length > 0)!;
    expect(
      (await heldUnderUser(app.store, entry[0])).some((key) => key.endsWith(':follows:v2')),
    ).toBe(true);
    expect((await listedSources(app, entry[0])).follows).toEqual(sortedIds(entry[1].follows));
  });

  it('a follow and an unfollow racing a slow fetch are applied on top of the answer', async () => {
    const app = await rig.start({ mode: { kind: 'slow', delayMs: 800 }, timeoutMs: 4_000 });
    const users = idList('cr', 6);
    for (const user of users) app.platform.graph.set(user, { follows: ['x', 'y'], topics: ['t'] });
    const T = app.clock.now();
    app.platform.addPosts([
      { author: 'x', id: 'x1', ts: T - 10 },
      { author: 'y', id: 'y1', ts: T - 10 },
      { author: 'z', id: 'z1', ts: T - 10 },
      { author: 'z', id: 'z2', ts: T - 20 },
    ]);
    await feedPosts(app);
    const coldStarts = users.map((user) => platformBadge(app, user));
    await waitFor(() => askedUsers(app.endpoint).flat().length === users.length, {
      timeoutMs: 800,
      message: 'the cold starts never reached the endpoint',
    });
    for (const user of users) {
      await platformOk(app, 'PUT', `/v1/users/${user}/follows/z`);
      await platformOk(app, 'DELETE', `/v1/users/${user}/follows/x`);
      await platformOk(app, 'PUT', `/v1/users/${user}/topics/u`);
    }
    // Before the first answer could have come: the race was run for each.
    expect(Date.now()).toBeLessThan(Math.min(...app.endpoint.requests.map((r) => r.at)) + 800);
    const served = await Promise.all(coldStarts);
    expect(served.map(({ badge }) => badge.feed)).toEqual(users.map(() => 3));
    for (const user of users) {
      expect(await listedSources(app, user)).toEqual({ follows: ['y', 'z'], topics: ['t', 'u'] });
    }
  });
});
