/**
 * System notices, red dots and conversations over real HTTP (shared spec api.md "Platform API",
 * "Client API"; docs/semantics.md "System notices", "Red dots", "Conversations", "The badge"):
 * every route's status and body, its authentication, its refusals (which change nothing), and the
 * badge after each kind of change compared with the definition. One in-process gateway per
 * test, on the memory engine and on a real redis-server. This file: system notices and red dots.
 */
import { describe, expect, it } from 'vitest';
import { badgeState } from '../support/badges.js';
import {
  client,
  expectError,
  platform,
  platformBadge,
  tokenFor,
  app,
  describeOnEachEngine,
} from './support.js';
import { expectBadInput, expectBodiesRefused, extrasCalls } from './extras-routes-support.js';

describeOnEachEngine('notices, red dots and conversations over HTTP', 'extras', () => {
  const { expectEmpty, publish, withdraw, mark, clear, myBadge, read, explain, snapshot } =
    extrasCalls(() => app);

  // ------------------------------------------------------------------ notices

  describe('system notices', () => {
    it('a user first seen starts at 0; publish counts, withdraw uncounts, read upTo and all', async () => {
      const token = await tokenFor('u1');
      await publish(1);
      await publish(2, app.clock.now() - 1000);
      // platform calls never see a user: their notice cursor is not set by them
      expect((await platformBadge(app, 'u1')).notices).toBe(0);
      expect((await explain('u1')).notices.seen).toBeNull();
      await publish(3);

      // the first end-user call sees u1 at the highest id published so far (3): 0 to count
      const first = await myBadge(token);
      expect(badgeState(first)).toEqual({
        feed: 0,
        notices: 0,
        conversations: {},
        conversationsTotal: 0,
        reddots: [],
        total: 0,
        display: '0',
      });
      expect((await explain('u1')).notices).toMatchObject({ seen: 3, highestPublished: 3 });

      await publish(4);
      await publish(5);
      await publish(6);
      const three = await myBadge(token);
      expect(badgeState(three)).toMatchObject({ notices: 3, total: 3, display: '3' });
      expect(three.version).toBeGreaterThan(first.version);

      // publishing a live id again changes nothing
      await publish(5);
      expect(await myBadge(token)).toEqual(three);

      // withdrawing one above the cursor uncounts it; one at or below the cursor changes nothing
      await withdraw(5);
      const two = await myBadge(token);
      expect(badgeState(two)).toMatchObject({ notices: 2, total: 2 });
      expect(two.version).toBeGreaterThan(three.version);
      await withdraw(2);
      await withdraw(5); // not live any more: still 204
      await withdraw(999); // never published: still 204
      expect(await myBadge(token)).toEqual(two);

      // a read up to 4 leaves 6; the answer is the new badge
      const afterRead = await read(token, { scope: 'notices', upTo: 4 });
      expect(badgeState(afterRead)).toMatchObject({ notices: 1, total: 1, display: '1' });
      expect(afterRead.version).toBeGreaterThan(two.version);
      // the cursor never moves back
      expect((await read(token, { scope: 'notices', upTo: 1 })).notices).toBe(1);
      // a read without upTo reads up to the highest id
      const all = await read(token, { scope: 'notices' });
      expect(badgeState(all)).toMatchObject({ notices: 0, total: 0 });
      expect((await explain('u1')).notices).toMatchObject({ seen: 6, contribution: 0 });

      // a user seen for the first time now starts at 0 too, and counts the next one
      const other = await tokenFor('u2');
      expect((await myBadge(other)).notices).toBe(0);
      await publish(7);
      expect((await myBadge(other)).notices).toBe(1);
      expect((await myBadge(token)).notices).toBe(1);
      // a read upTo beyond the highest id moves the cursor there: a later notice below it
      // never counts, one above does
      expect((await read(other, { scope: 'notices', upTo: 10 })).notices).toBe(0);
      await publish(9);
      await publish(11);
      expect((await myBadge(other)).notices).toBe(1);
      expect((await myBadge(token)).notices).toBe(3);
    });

    it('bad notice ids and bodies are 400 and change nothing', async () => {
      const token = await tokenFor('u1');
      await myBadge(token);
      await publish(1);
      await publish(2);
      const before = await snapshot(['u1']);
      expect(before.badges[0]!.notices).toBe(2);

      for (const bad of ['0', '-1', '1.5', 'abc', '1e3', '9007199254740992', '%20', '-0']) {
        expectError(await platform(app, 'DELETE', `/v1/notices/${bad}`), 400, 'UB_ERR_BAD_ID');
      }
      const badBodies: unknown[] = [
        { id: 0 },
        { id: -1 },
        { id: 1.5 },
        { id: '3' },
        { id: 2 ** 53 },
        { id: null },
        {},
        { id: 3, extra: true },
        { id: 3, ts: -1 },
        { id: 3, ts: 'now' },
        { id: 3, ts: 1.5 },
        [3],
        3,
      ];
      await expectBodiesRefused(app, 'POST', '/v1/notices', 'publish', badBodies, '{"id":3');
      expectError(await platform(app, 'POST', '/v1/notices'), 400, 'UB_ERR_BAD_REQUEST');
      // reads with a bad upTo
      for (const upTo of [0, -1, 1.5, '3', null]) {
        expectBadInput(
          await client(app, token, 'POST', '/v1/badge/read', {
            body: { scope: 'notices', upTo },
          }),
          `read upTo ${JSON.stringify(upTo)}`,
        );
      }
      expect(await snapshot(['u1'])).toEqual(before);
    });
  });

  // ------------------------------------------------------------------ red dots

  describe('red dots', () => {
    it('listed in `reddots`, never in total; a read clears it for the reader only; a newer mark shows again', async () => {
      const t1 = await tokenFor('u1');
      const t2 = await tokenFor('u2');
      await myBadge(t1);
      await myBadge(t2);
      await publish(1);
      const base = await myBadge(t1);
      expect(badgeState(base)).toMatchObject({ notices: 1, reddots: [], total: 1 });

      // no body, an empty JSON body, or a ts
      await mark('settings');
      await expectEmpty(
        platform(app, 'PUT', '/v1/reddots/wallet', { body: {} }),
        204,
        'mark wallet',
      );
      await mark('m.n:o@p-q_r', app.clock.now() - 5000);
      const shown = await myBadge(t1);
      expect(badgeState(shown)).toEqual({
        ...badgeState(base),
        reddots: ['m.n:o@p-q_r', 'settings', 'wallet'],
      });
      expect(shown.version).toBeGreaterThan(base.version);
      expect((await myBadge(t2)).reddots).toEqual(['m.n:o@p-q_r', 'settings', 'wallet']);

      // a reddot read clears that one for u1 only, and changes no count
      app.clock.advance(10);
      const clicked = await read(t1, { scope: 'reddot', name: 'settings' });
      expect(badgeState(clicked)).toEqual({
        ...badgeState(base),
        reddots: ['m.n:o@p-q_r', 'wallet'],
      });
      expect(clicked.version).toBeGreaterThan(shown.version);
      expect((await myBadge(t2)).reddots).toEqual(['m.n:o@p-q_r', 'settings', 'wallet']);

      // a mark older than the click stays hidden; a newer one shows again
      await mark('settings', app.clock.now() - 5);
      expect((await myBadge(t1)).reddots).toEqual(['m.n:o@p-q_r', 'wallet']);
      app.clock.advance(10);
      await mark('settings');
      expect((await myBadge(t1)).reddots).toEqual(['m.n:o@p-q_r', 'settings', 'wallet']);

      // clear removes it for everyone; clearing again (or an unknown one) is still 204
      await clear('wallet');
      await clear('wallet');
      await clear('never-marked');
      expect((await myBadge(t1)).reddots).toEqual(['m.n:o@p-q_r', 'settings']);
      expect((await myBadge(t2)).reddots).toEqual(['m.n:o@p-q_r', 'settings']);

      const e = await explain('u1');
      expect(e.reddots.counted).toBe(false);
      expect(e.reddots.list.map((r) => [r.name, r.shown])).toEqual([
        ['m.n:o@p-q_r', true],
        ['settings', true],
      ]);
      expect(e.total).toBe(1);

      // a read of scope all clicks every red dot (and reads every other source)
      const all = await read(t1, { scope: 'all' });
      expect(badgeState(all)).toMatchObject({ reddots: [], notices: 0, total: 0 });
      expect((await myBadge(t2)).reddots).toEqual(['m.n:o@p-q_r', 'settings']);
    });

    it('bad red dot names and bodies are 400 and change nothing', async () => {
      const token = await tokenFor('u1');
      await myBadge(token);
      await mark('settings');
      const before = await snapshot(['u1']);
      for (const bad of ['bad%20name', 'x'.repeat(65), 'a%2Fb', '%C3%A9', 'a+b']) {
        expectError(await platform(app, 'PUT', `/v1/reddots/${bad}`), 400, 'UB_ERR_BAD_ID');
        expectError(await platform(app, 'DELETE', `/v1/reddots/${bad}`), 400, 'UB_ERR_BAD_ID');
      }
      const badMarks = [{ ts: -1 }, { ts: 'now' }, { ts: 1.5 }, { when: 1 }, [1], 'x'];
      await expectBodiesRefused(app, 'PUT', '/v1/reddots/other', 'mark', badMarks, '{"ts":');
      for (const name of ['bad name', '', 'x'.repeat(65)]) {
        expectError(
          await client(app, token, 'POST', '/v1/badge/read', {
            body: { scope: 'reddot', name },
          }),
          400,
          'UB_ERR_BAD_ID',
        );
      }
      expectError(
        await client(app, token, 'POST', '/v1/badge/read', { body: { scope: 'reddot' } }),
        400,
        'UB_ERR_BAD_REQUEST',
      );
      expect(await snapshot(['u1'])).toEqual(before);
    });
  });
});
