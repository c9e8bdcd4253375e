/**
 * Follow changes racing a fetch of the user's sources (docs/semantics.md, "Where a user's
 * sources live"), over real HTTP on both engines. The endpoint answers slowly; while a cold
 * start's request is in flight the platform follows, unfollows and replaces (authors and
 * topics); once the answer is installed the held sets are the answer with the changes applied
 * in order (set operations: none lost, whichever came first), and the badge counts them. A
 * change that arrives before any fetch stores nothing: the platform's answer is the truth.
 */
import { mulberry32 } from '@bubble/protocol';
import { waitFor } from '@bubble/test-utils';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { idList, randomPosts, type PlatformPost } from '../support/sources-graph.js';
import {
  SOURCES_ENGINES,
  askedUsers,
  feedPosts,
  listedSources,
  platformBadge,
  platformOk,
  sortedIds,
  useSourcesRig,
  type SourcesApp,
} from './sources-support.js';

type Change =
  | { op: 'follow' | 'unfollow'; kind: 'follows' | 'topics'; id: string }
  | { op: 'replace'; kind: 'follows' | 'topics'; ids: string[] };

/** Sends one change through the platform API. */
async function send(app: SourcesApp, user: string, change: Change): Promise<void> {
  const base = `/v1/users/${user}/${change.kind}`;
  if (change.op === 'replace') {
    const body = change.kind === 'follows' ? { authors: change.ids } : { topics: change.ids };
    await platformOk(app, 'PUT', base, body);
  } else {
    await platformOk(app, change.op === 'follow' ? 'PUT' : 'DELETE', `${base}/${change.id}`);
  }
}

/** The answer with `changes` applied in order, as sets. */
function applied(
  answer: { follows: string[]; topics: string[] },
  changes: readonly Change[],
): { follows: string[]; topics: string[] } {
  const sets = { follows: new Set(answer.follows), topics: new Set(answer.topics) };
  for (const change of changes) {
    if (change.op === 'replace') sets[change.kind] = new Set(change.ids);
    else if (change.op === 'follow') sets[change.kind].add(change.id);
    else sets[change.kind].delete(change.id);
  }
  return { follows: sortedIds(sets.follows), topics: sortedIds(sets.topics) };
}

/** A few random changes over `authors` and `topics`, a replace now and then. */
function randomChanges(
  rand: () => number,
  authors: readonly string[],
  topics: readonly string[],
): Change[] {
  const pick = (list: readonly string[]) => list[Math.floor(rand() * list.length)]!;
  return Array.from({ length: 3 + Math.floor(rand() * 5) }, () => {
    const kind = rand() < 0.7 ? 'follows' : 'topics';
    const ids = kind === 'follows' ? authors : topics;
    const r = rand();
    if (r < 0.45) return { op: 'follow', kind, id: pick(ids) };
    if (r < 0.85) return { op: 'unfollow', kind, id: pick(ids) };
    return { op: 'replace', kind, ids: ids.filter(() => rand() < 0.3) };
  });
}

const DELAY_MS = 1_500;

/**
 * One race: twelve users' cold starts wait on the slow endpoint while the platform sends each
 * a few random changes; then every held set and badge is checked.
 */
async function race(app: SourcesApp, seed: number): Promise<void> {
  const T = app.clock.now();
  const rand = mulberry32(seed);
  const users = idList('r', 12);
  const authors = idList('a', 8);
  const topics = idList('t', 4);
  for (const user of users) {
    app.platform.graph.set(user, {
      follows: authors.filter(() => rand() < 0.4),
      topics: topics.filter(() => rand() < 0.3),
    });
  }
  const posts: PlatformPost[] = randomPosts(rand, authors, topics, T, 60);
  app.platform.addPosts(posts);
  await feedPosts(app);

  const coldStarts = users.map((user) => platformBadge(app, user));
  await waitFor(() => askedUsers(app.endpoint).flat().length === users.length, {
    timeoutMs: DELAY_MS,
    message: 'the cold starts never reached the endpoint',
  });
  const changes = new Map(users.map((user) => [user, randomChanges(rand, authors, topics)]));
  await Promise.all(
    users.map(async (user) => {
      for (const change of changes.get(user)!) await send(app, user, change);
    }),
  );
  // Every change went in before the first answer could have: the race was run for each.
  const firstAnswerAt = Math.min(...app.endpoint.requests.map((r) => r.at)) + DELAY_MS;
  expect(Date.now()).toBeLessThan(firstAnswerAt);
  const served = await Promise.all(coldStarts);

  for (const [i, user] of users.entries()) {
    const expected = applied(app.platform.graph.get(user)!, changes.get(user)!);
    const listed = await listedSources(app, user);
    expect({ user, ...listed }).toEqual({ user, ...expected });
    // The cold start that waited counted the sets installed, changes included.
    const feed = app.platform.feedOver(expected.follows, expected.topics, T);
    expect({ user, feed: served[i]!.badge.feed, stale: served[i]!.stale }).toEqual({
      user,
      feed,
      stale: false,
    });
  }
  expect(askedUsers(app.endpoint).flat()).toHaveLength(users.length);
}

for (const engine of SOURCES_ENGINES) {
  describe(`follow changes racing a fetch [${engine}]`, () => {
    const rig = useSourcesRig(engine, 'races');

    it('changes made while the fetch is in flight are applied on top of the answer: held sets and badges as the answer ∘ changes', async () => {
      // One run a test (a slow answer each); fast-check reports the seed of a failing one.
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: 1, max: 2 ** 31 - 1 }), async (seed) => {
          const app = await rig.start({
            mode: { kind: 'slow', delayMs: DELAY_MS },
            timeoutMs: 4 * DELAY_MS,
          });
          await race(app, seed);
        }),
        { numRuns: 1 },
      );
    });

    it('a change before any fetch stores nothing: the answer is the truth, with it or without it', async () => {
      const app = await rig.start();
      const T = app.clock.now();
      app.platform.addPosts([
        { author: 'kept', id: 'k1', ts: T - 1000 },
        { author: 'told', id: 't1', ts: T - 1000 },
        { author: 'told', id: 't2', ts: T - 2000 },
        { author: 'untold', id: 'u1', ts: T - 1000 },
      ]);
      await feedPosts(app);
      app.platform.graph.set('p', { follows: ['kept'], topics: [] });
      app.platform.graph.set('q', { follows: ['kept'], topics: [] });

      // Both followed an author; only p's platform (the truth) recorded it.
      await platformOk(app, 'PUT', '/v1/users/p/follows/told');
      await platformOk(app, 'PUT', '/v1/users/q/follows/untold');
      await platformOk(app, 'DELETE', '/v1/users/q/follows/kept');
      app.platform.graph.get('p')!.follows.push('told');
      expect(app.endpoint.requests).toEqual([]);

      const [p, q] = await Promise.all([platformBadge(app, 'p'), platformBadge(app, 'q')]);
      expect(p.badge.feed).toBe(3);
      expect(q.badge.feed).toBe(1);
      expect((await listedSources(app, 'p')).follows).toEqual(['kept', 'told']);
      expect((await listedSources(app, 'q')).follows).toEqual(['kept']);
      expect(p.badge.feed).toBe(app.platform.feed('p', T));
      expect(q.badge.feed).toBe(app.platform.feed('q', T));
    });
  });
}
