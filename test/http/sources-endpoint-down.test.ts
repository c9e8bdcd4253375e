/**
 * The platform's sources endpoint down or misbehaving (docs/api.md, "Sources endpoint"), over
 * real HTTP on both engines. While it fails, hangs or answers garbage, a user not held is
 * served 200 without the feed (`feed` 0, every other source exact) and `X-Bubble-Stale: 1`;
 * an entry over the caps or breaking the id grammar is refused for that user alone, the rest of
 * the answer stands, and nothing of it is stored; once the endpoint answers again the badge is
 * exact and not stale. The circuit breaker keeps many cold starts from costing a request each.
 */
import { mulberry32, type Badge } from '@bubble/protocol';
import { waitFor, type SourcesEndpointMode } from '@bubble/test-utils';
import { describe, expect, it } from 'vitest';
import { idList, randomGraph, randomPosts } from '../support/sources-graph.js';
import {
  CAPS,
  SOURCES_ENGINES,
  clientBadge,
  feedPosts,
  heldUnderUser,
  platformBadge,
  platformOk,
  useSourcesRig,
  type ServedBadge,
  type SourcesApp,
} from './sources-support.js';

/** A badge without what moves on its own: the counts. */
function countsOf(badge: Badge) {
  const { feed, notices, conversations, conversationsTotal, reddots, counters } = badge;
  return { feed, notices, conversations, conversationsTotal, reddots, counters };
}

/**
 * Posts by the authors the users follow, and every source but the feed for `users`: a
 * conversation with 3 unread, a red dot, a mention.
 */
async function platformState(app: SourcesApp, users: readonly string[]): Promise<void> {
  const T = app.clock.now();
  const rand = mulberry32(7);
  const authors = idList('a', 6);
  for (const [user, entry] of randomGraph(rand, { users, authors, topics: ['t'] }, T))
    app.platform.graph.set(user, entry);
  // Every user follows someone who posted: an exact feed is never 0 by chance.
  for (const user of users) {
    const entry = app.platform.graph.get(user) ?? { follows: [], topics: [] };
    app.platform.graph.set(user, { ...entry, follows: [...new Set([...entry.follows, 'a0'])] });
  }
  app.platform.addPosts(randomPosts(rand, authors, ['t'], T, 40));
  app.platform.addPosts([{ author: 'a0', id: 'recent', ts: T - 1 }]);
  await feedPosts(app);
  await platformOk(app, 'PUT', '/v1/conversations/c1/members', { members: [...users, 'peer'] });
  const messages = [1, 2, 3].map((seq) => ({ seq, from: 'peer' }));
  await platformOk(app, 'POST', '/v1/conversations/c1/messages', { messages }, 202);
  await platformOk(app, 'PUT', '/v1/reddots/r1');
  const events = users.map((user) => ({ user, kind: 'mention', id: 'm1' }));
  await platformOk(app, 'POST', '/v1/counters', { events }, 202);
}

/** The badge served without the feed: 200, stale, every other source as the exact badge has it. */
function expectStale(app: SourcesApp, user: string, served: ServedBadge): void {
  expect({ user, stale: served.stale, ...countsOf(served.badge) }).toEqual({
    user,
    stale: true,
    feed: 0,
    notices: 0,
    conversations: { c1: 3 },
    conversationsTotal: 3,
    reddots: ['r1'],
    counters: { mention: 1 },
  });
  expect(served.badge.total).toBe(3 + 1);
  expect(app.platform.feed(user, app.clock.now())).toBeGreaterThan(0);
}

function expectExact(app: SourcesApp, user: string, served: ServedBadge): void {
  expect({ user, stale: served.stale, ...countsOf(served.badge) }).toEqual({
    user,
    stale: false,
    feed: app.platform.feed(user, app.clock.now()),
    notices: 0,
    conversations: { c1: 3 },
    conversationsTotal: 3,
    reddots: ['r1'],
    counters: { mention: 1 },
  });
}

/** Polls as the user until the badge is exact and not stale (the breaker may still pause). */
async function exactOnceBack(app: SourcesApp, user: string): Promise<void> {
  let last: ServedBadge | undefined;
  await waitFor(
    async () => {
      last = await clientBadge(app, user);
      return !last.stale && last.badge.feed === app.platform.feed(user, app.clock.now());
    },
    { timeoutMs: 5_000, intervalMs: 50, message: `${user}'s badge never became exact` },
  );
  expectExact(app, user, last!);
}

const DOWN: Array<[string, SourcesEndpointMode]> = [
  ['fails (500)', { kind: 'fail' }],
  ['hangs past the timeout', { kind: 'hang' }],
  ['answers garbage', { kind: 'garbage' }],
];

const BAD_ENTRIES: Array<[string, SourcesEndpointMode]> = [
  ['over the caps', { kind: 'over-cap', cap: CAPS.follows, users: ['bad'] }],
  ['breaking the id grammar', { kind: 'bad-ids', users: ['bad'] }],
];

const TIMEOUT_MS = 300;
/** A short pause of the breaker, so a test sees it close again. */
const BREAKER = { pauseMs: 200, maxPauseMs: 400 };
const PAUSE_MS = 500;

for (const engine of SOURCES_ENGINES) {
  describe(`the sources endpoint down [${engine}]`, () => {
    const rig = useSourcesRig(engine, 'down');

    it.each(DOWN)(
      'the endpoint %s: 200 without the feed and X-Bubble-Stale, other sources exact; exact once it is back',
      async (_, mode) => {
        const app = await rig.start({ mode, timeoutMs: TIMEOUT_MS, client: { breaker: BREAKER } });
        await platformState(app, ['u', 'v']);
        expectStale(app, 'u', await clientBadge(app, 'u'));
        expectStale(app, 'v', await platformBadge(app, 'v'));
        expect(await app.store.sources.held(['u', 'v'])).toEqual([false, false]);
        expect(app.endpoint.requests.length).toBeGreaterThan(0);

        app.endpoint.setMode({ kind: 'ok' });
        await exactOnceBack(app, 'u');
        await exactOnceBack(app, 'v');
        expect(await app.store.sources.held(['u', 'v'])).toEqual([true, true]);
      },
    );

    it.each(BAD_ENTRIES)(
      "one user's entry %s is refused for that user alone: stale, nothing stored; the others exact",
      async (_, mode) => {
        const app = await rig.start({ mode, timeoutMs: TIMEOUT_MS });
        const good = idList('g', 6);
        await platformState(app, ['bad', ...good]);
        const served = await Promise.all(['bad', ...good].map((user) => clientBadge(app, user)));
        expectStale(app, 'bad', served[0]!);
        good.forEach((user, i) => expectExact(app, user, served[i + 1]!));
        expect(await app.store.sources.held(['bad', ...good])).toEqual([
          false,
          ...good.map(() => true),
        ]);
        expect((await heldUnderUser(app.store, 'bad')).join(' ')).not.toMatch(/follows|topics/);

        app.endpoint.setMode({ kind: 'ok' });
        await exactOnceBack(app, 'bad');
      },
    );

    it('the breaker: many cold starts while the endpoint fails cost a few requests, and it closes once the endpoint is back', async () => {
      const app = await rig.start({
        mode: { kind: 'fail' },
        timeoutMs: TIMEOUT_MS,
        client: { breaker: { failures: 5, pauseMs: PAUSE_MS, maxPauseMs: PAUSE_MS } },
      });
      const users = idList('b', 40);
      await platformState(app, users);
      // One after the other: without the breaker each would cost a request (and its retries).
      // With it: the five failures that open it, then one probe per pause at most.
      const downFrom = Date.now();
      for (const user of users) expectStale(app, user, await clientBadge(app, user));
      const probes = Math.ceil((Date.now() - downFrom) / PAUSE_MS);
      expect(app.endpoint.requests.length).toBeLessThanOrEqual(5 + probes);
      expect(app.endpoint.requests.length).toBeLessThan(users.length / 2);
      expect(app.client.stats().breakerOpen).toBe(1);

      app.endpoint.setMode({ kind: 'ok' });
      await exactOnceBack(app, users[0]!);
      expect(app.client.stats().breakerOpen).toBe(0);
      const again = await Promise.all(users.map((user) => clientBadge(app, user)));
      users.forEach((user, i) => expectExact(app, user, again[i]!));
    });
  });
}
