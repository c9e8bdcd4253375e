/**
 * System notices, red dots and conversations over real HTTP (shared spec api.md "Platform API",
 * "Client API"; docs/semantics.md "System notices", "Red dots", "Conversations", "The badge"):
 * every route's status and body, its authentication, its refusals (which change nothing), and the
 * badge after each kind of change compared with the definition. One in-process gateway per
 * test, on the memory engine and on a real redis-server. This file: the badge and authentication.
 */
import { describe, expect, it } from 'vitest';
import { badgeState } from '../support/badges.js';
import {
  API_KEY,
  call,
  client,
  expectError,
  parseJson,
  platform,
  platformBadge,
  tokenFor,
  app,
  describeOnEachEngine,
  type Badge,
} from './support.js';
import { extrasCalls } from './extras-routes-support.js';

describeOnEachEngine('notices, red dots and conversations over HTTP', 'extras', (apps) => {
  const {
    publish,
    withdraw,
    mark,
    setMembers,
    leave,
    send,
    myBadge,
    read,
    mute,
    explain,
    snapshot,
  } = extrasCalls(() => app);

  // ------------------------------------------------------------------ the badge

  describe('the badge', () => {
    it('display is "N+" above BUBBLE_DISPLAY_CAP, counting notices and unmuted conversations only', async () => {
      const capped = await apps.start({ rules: { displayCap: 3 } });
      const token = await tokenFor('u1');
      await myBadge(token, capped);
      await publish(1, undefined, capped);
      await setMembers('c1', ['u1', 'u2'], capped);
      await send(
        'c1',
        [1, 2].map((seq) => ({ seq, from: 'u2' })),
        capped,
      );
      expect(badgeState(await myBadge(token, capped))).toMatchObject({
        notices: 1,
        conversationsTotal: 2,
        total: 3,
        display: '3',
      });
      await publish(2, undefined, capped);
      expect(badgeState(await myBadge(token, capped))).toMatchObject({
        total: 4,
        display: '3+',
      });
      await send('c1', { seq: 40, from: 'u2' }, capped);
      expect(badgeState(await myBadge(token, capped))).toMatchObject({
        conversations: { c1: 40 },
        total: 42,
        display: '3+',
      });
      // a muted conversation is out of the display too
      const reply = await client(capped, token, 'PUT', '/v1/conversations/c1/mute', {
        body: { muted: true },
      });
      expect(reply.status).toBe(204);
      expect(badgeState(await myBadge(token, capped))).toMatchObject({
        conversations: { c1: 40 },
        total: 2,
        display: '2',
      });
      const explained = await explain('u1', capped);
      expect({ total: explained.total, display: explained.display }).toEqual({
        total: 2,
        display: '2',
      });

      // and the default cap of 99
      const t2 = await tokenFor('u2');
      await myBadge(t2);
      await setMembers('c9', ['u2', 'u3']);
      await send('c9', { seq: 99, from: 'u3' });
      expect(badgeState(await myBadge(t2))).toMatchObject({ total: 99, display: '99' });
      await publish(1);
      expect(badgeState(await myBadge(t2))).toMatchObject({ total: 100, display: '99+' });
    });

    it('explain shows per-source contributions summing to total; reset returns the recomputed badge', async () => {
      const token = await tokenFor('u1');
      await myBadge(token);
      // feed 2
      for (const author of ['a1', 'a2']) {
        expect((await platform(app, 'PUT', `/v1/users/u1/follows/${author}`)).status).toBe(204);
      }
      const ts = app.clock.now() - 1000;
      expect(
        (
          await platform(app, 'POST', '/v1/posts', {
            body: {
              posts: [
                { author: 'a1', id: 'p1', ts },
                { author: 'a2', id: 'p2', ts },
              ],
            },
          })
        ).status,
      ).toBe(202);
      // notices 2
      await publish(1);
      await publish(2);
      // conversations: c1 3 counted, c2 5 muted
      await setMembers('c1', ['u1', 'u2']);
      await setMembers('c2', ['u1', 'u2']);
      await send(
        'c1',
        [1, 2, 3].map((seq) => ({ seq, from: 'u2' })),
      );
      await send('c2', { seq: 5, from: 'u2' });
      await mute(token, 'c2', true);
      // red dots: one shown, one clicked
      await mark('shown');
      await mark('clicked');
      app.clock.advance(1);
      await read(token, { scope: 'reddot', name: 'clicked' });

      const badge = await myBadge(token);
      expect(badgeState(badge)).toEqual({
        feed: 2,
        notices: 2,
        conversations: { c1: 3, c2: 5 },
        conversationsTotal: 3,
        reddots: ['shown'],
        total: 7,
        display: '7',
      });

      const e = await explain('u1');
      expect(Object.keys(e).sort()).toEqual(
        [
          'user',
          'now',
          'feed',
          'notices',
          'conversations',
          'reddots',
          'counters',
          'total',
          'display',
          'stored',
        ].sort(),
      );
      expect(e).toMatchObject({
        user: 'u1',
        now: app.clock.now(),
        feed: { contribution: 2 },
        notices: { contribution: 2, highestPublished: 2, seen: 0 },
        conversations: { contribution: 3 },
        reddots: { counted: false },
        total: 7,
        display: '7',
      });
      expect(e.counters).toEqual({ kinds: { mention: 0, comment: 0, like: 0 }, contribution: 0 });
      expect(
        e.feed.contribution +
          e.notices.contribution +
          e.conversations.contribution +
          e.counters.contribution,
      ).toBe(e.total);
      expect(e.conversations.list).toEqual([
        { id: 'c2', maxSeq: 5, readSeq: 0, unread: 5, muted: true, counted: false },
        { id: 'c1', maxSeq: 3, readSeq: 0, unread: 3, muted: false, counted: true },
      ]);
      expect(
        e.conversations.list.filter((c) => c.counted).reduce((sum, c) => sum + c.unread, 0),
      ).toBe(e.conversations.contribution);
      expect(e.reddots.list).toEqual([
        {
          name: 'clicked',
          markedAt: expect.any(Number),
          clickedAt: app.clock.now(),
          shown: false,
        },
        { name: 'shown', markedAt: expect.any(Number), clickedAt: null, shown: true },
      ]);

      // reset: the badge recomputed from the stored sources, even over a drifted stored state
      const drifted = await app.store.badges.save('u1', { f: 40, n: 9 }, app.clock.now());
      expect(drifted.version).toBeGreaterThan(badge.version);
      const reply = await platform(app, 'POST', '/v1/users/u1/badge/reset');
      expect(reply.status).toBe(200);
      const reset = parseJson(reply) as Badge;
      expect(reset.user).toBe('u1');
      expect(badgeState(reset)).toEqual(badgeState(badge));
      expect(reset.version).toBeGreaterThan(drifted.version);
      expect(reset.epoch).toBe(badge.epoch);
      // and it is what is served from now on; a reset of a settled state keeps its version
      expect(await platformBadge(app, 'u1')).toEqual(reset);
      const again = parseJson(await platform(app, 'POST', '/v1/users/u1/badge/reset')) as Badge;
      expect(again).toEqual(reset);
      // explain and reset of an unseen user do not see them
      expect(
        (parseJson(await platform(app, 'POST', '/v1/users/u7/badge/reset')) as Badge).total,
      ).toBe(0);
      expect((await explain('u7')).notices.seen).toBeNull();
      for (const bad of ['bad%20id', 'x'.repeat(65)]) {
        expectError(
          await platform(app, 'GET', `/v1/users/${bad}/badge/explain`),
          400,
          'UB_ERR_BAD_ID',
        );
        expectError(
          await platform(app, 'POST', `/v1/users/${bad}/badge/reset`),
          400,
          'UB_ERR_BAD_ID',
        );
      }
    });

    it('the version increases with each distinct state and stays with a repeated one', async () => {
      const token = await tokenFor('u1');
      const seen: Badge[] = [await myBadge(token)];
      const step = async (change: () => Promise<unknown>) => {
        await change();
        const badge = await myBadge(token);
        const previous = seen.at(-1)!;
        const same = JSON.stringify(badgeState(badge)) === JSON.stringify(badgeState(previous));
        if (same) expect(badge.version).toBe(previous.version);
        else expect(badge.version).toBeGreaterThan(previous.version);
        expect(badge.epoch).toBe(previous.epoch);
        seen.push(badge);
      };
      await step(() => publish(1));
      await step(() => publish(1)); // unchanged
      await step(() => mark('r1'));
      await step(() => setMembers('c1', ['u1', 'u2'])); // unchanged: a new member is at 0
      await step(() => send('c1', { seq: 1, from: 'u2' }));
      await step(() => send('c1', { seq: 1, from: 'u2' })); // unchanged
      await step(() => mute(token, 'c1', true));
      await step(() => mute(token, 'c1', false));
      await step(() => read(token, { scope: 'reddot', name: 'r1' }));
      await step(() => read(token, { scope: 'notices' }));
      await step(() => withdraw(1)); // unchanged: already read
      await step(() => send('c1', { seq: 2, from: 'u2' }));
      await step(() => read(token, { scope: 'conversation', id: 'c1', seq: 1 }));
      await step(() => leave('c1', 'u1'));
      await step(() => publish(2));
      await step(() => read(token, { scope: 'all' }));
      const distinct = new Set(seen.map((b) => b.version));
      expect(distinct.size).toBe(13);
      expect(badgeState(seen.at(-1)!)).toMatchObject({
        total: 0,
        reddots: [],
        conversations: {},
      });
    });
  });

  // ------------------------------------------------------------------ authentication

  describe('authentication', () => {
    /** u1's token, after a notice, a red dot and a conversation message that count for u1. */
    const oneChangeOfEachKind = async (): Promise<string> => {
      const t1 = await tokenFor('u1');
      await myBadge(t1);
      await publish(1);
      await mark('r1');
      await setMembers('c1', ['u1', 'u2']);
      await send('c1', { seq: 1, from: 'u2' });
      return t1;
    };

    it('every new platform route refuses a missing or wrong X-Api-Key with 401 and changes nothing', async () => {
      const t1 = await oneChangeOfEachKind();
      const before = await snapshot(['u1', 'u2'], [t1]);

      const routes: [string, string, unknown?][] = [
        ['POST', '/v1/notices', { id: 2 }],
        ['DELETE', '/v1/notices/1'],
        ['PUT', '/v1/reddots/r2', { ts: app.clock.now() }],
        ['DELETE', '/v1/reddots/r1'],
        ['PUT', '/v1/conversations/c1/members', { members: ['u3'] }],
        ['POST', '/v1/conversations/c1/members', { members: ['u3'] }],
        ['DELETE', '/v1/conversations/c1/members/u1'],
        ['DELETE', '/v1/conversations/c1'],
        ['POST', '/v1/conversations/c1/messages', { seq: 2, from: 'u2' }],
        ['GET', '/v1/users/u1/badge/explain'],
        ['POST', '/v1/users/u1/badge/reset'],
      ];
      const refused: Record<string, string>[] = [
        {},
        { 'x-api-key': '' },
        { 'x-api-key': 'wrong' },
        { 'x-api-key': `${API_KEY}x` },
        { authorization: `Bearer ${t1}` },
      ];
      for (const [method, path, body] of routes) {
        for (const headers of refused) {
          const reply = await call(app, method, path, { headers, body });
          expectError(reply, 401, 'UB_ERR_UNAUTHORIZED');
        }
        // the key in the query string is never accepted either
        const query = await call(app, method, `${path}?api_key=${API_KEY}`, { body });
        expect(query.status, `${method} ${path}?api_key`).toBeGreaterThanOrEqual(400);
        expect(query.status).toBeLessThan(500);
      }
      expect(await snapshot(['u1', 'u2'], [t1])).toEqual(before);
    });

    it('the client routes refuse a call without a valid JWT with 401 and change nothing', async () => {
      const t1 = await oneChangeOfEachKind();
      const before = await snapshot(['u1'], [t1]);
      const wrongSecret = t1.slice(0, -3) + (t1.endsWith('AAA') ? 'BBB' : 'AAA');

      const routes: [string, string, unknown?][] = [
        ['GET', '/v1/conversations'],
        ['GET', '/v1/conversations?limit=5'],
        ['PUT', '/v1/conversations/c1/mute', { muted: true }],
        ['POST', '/v1/badge/read', { scope: 'notices' }],
        ['POST', '/v1/badge/read', { scope: 'notices', upTo: 1 }],
        ['POST', '/v1/badge/read', { scope: 'conversation', id: 'c1' }],
        ['POST', '/v1/badge/read', { scope: 'conversation', id: 'c1', seq: 1 }],
        ['POST', '/v1/badge/read', { scope: 'reddot', name: 'r1' }],
        ['POST', '/v1/badge/read', { scope: 'all' }],
      ];
      const refused: Record<string, string>[] = [
        {},
        { authorization: 'Bearer' },
        { authorization: 'Bearer not.a.jwt' },
        { authorization: `Bearer ${wrongSecret}` },
        { authorization: `Basic ${t1}` },
        { 'x-api-key': API_KEY },
      ];
      for (const [method, path, body] of routes) {
        for (const headers of refused) {
          expectError(await call(app, method, path, { headers, body }), 401, 'UB_ERR_UNAUTHORIZED');
        }
      }
      expect(await snapshot(['u1'], [t1])).toEqual(before);
      expect(before.badges[0]).toMatchObject({ notices: 1, reddots: ['r1'], total: 2 });
    });
  });
});
