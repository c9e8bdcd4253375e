/**
 * System notices, red dots and conversations over real HTTP (shared spec api.md "Platform API",
 * "Client API"; docs/semantics.md "System notices", "Red dots", "Conversations", "The badge"):
 * every route's status and body, its authentication, its refusals (which change nothing), and the
 * badge after each kind of change compared with the definition. One in-process gateway per
 * test, on the memory engine and on a real redis-server. This file: conversations: leaving, bad input and the list.
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
import { expectBadInput, extrasCalls } from './extras-routes-support.js';

describeOnEachEngine('notices, red dots and conversations over HTTP', 'extras', () => {
  const { setMembers, addMembers, leave, dissolve, send, myBadge, list, mute, snapshot } =
    extrasCalls(() => app);

  describe('conversations', () => {
    it('leaving or dissolution removes the conversation at once; joining again starts fresh', async () => {
      const [t1, t2] = (await Promise.all(['u1', 'u2'].map((u) => tokenFor(u)))) as [
        string,
        string,
      ];
      await addMembers('c1', ['u1', 'u2', 'u3']);
      await addMembers('c2', ['u1', 'u2']);
      await send('c1', [
        { seq: 1, from: 'u3' },
        { seq: 2, from: 'u3' },
      ]);
      await send('c2', { seq: 1, from: 'u3' });
      await mute(t1, 'c1', true);
      expect(badgeState(await myBadge(t1))).toMatchObject({
        conversations: { c1: 2, c2: 1 },
        conversationsTotal: 1,
      });

      // leave: gone from the platform badge, the client badge and the list at once
      await leave('c1', 'u1');
      expect(badgeState(await platformBadge(app, 'u1'))).toMatchObject({
        conversations: { c2: 1 },
        conversationsTotal: 1,
        total: 1,
      });
      expect((await list(t1)).map((c) => c.id)).toEqual(['c2']);
      expectError(
        await client(app, t1, 'POST', '/v1/badge/read', {
          body: { scope: 'conversation', id: 'c1' },
        }),
        403,
        'UB_ERR_FORBIDDEN',
      );
      // leaving again (or a member of nothing) is still 204
      await leave('c1', 'u1');
      await leave('nope', 'u1');
      // the others are still members
      expect((await platformBadge(app, 'u2')).conversations).toEqual({ c1: 2, c2: 1 });
      // a message now does not reach u1
      await send('c1', { seq: 3, from: 'u3' });
      expect((await platformBadge(app, 'u1')).conversations).toEqual({ c2: 1 });

      // joining again: at 0 and not muted (the old cursor and mute are forgotten)
      await addMembers('c1', ['u1']);
      expect((await platformBadge(app, 'u1')).conversations).toEqual({ c2: 1 });
      await send('c1', { seq: 4, from: 'u3' });
      expect(badgeState(await myBadge(t1))).toMatchObject({
        conversations: { c1: 1, c2: 1 },
        conversationsTotal: 2,
        total: 2,
      });
      expect((await list(t1)).find((c) => c.id === 'c1')).toMatchObject({
        muted: false,
        unread: 1,
        maxSeq: 4,
      });
      // adding a member already there keeps their cursor
      await addMembers('c1', ['u1', 'u2']);
      expect((await platformBadge(app, 'u1')).conversations).toEqual({ c1: 1, c2: 1 });

      // PUT members replaces: u1 removed at once, u4 joins at 0, u2 keeps its cursor
      await setMembers('c1', ['u2', 'u3', 'u4']);
      expect((await platformBadge(app, 'u1')).conversations).toEqual({ c2: 1 });
      expect((await platformBadge(app, 'u4')).conversations).toEqual({});
      expect((await platformBadge(app, 'u2')).conversations).toEqual({ c1: 4, c2: 1 });

      // dissolve: gone for every member at once; messages to it are 404
      await dissolve('c2');
      expect(badgeState(await myBadge(t1))).toMatchObject({
        conversations: {},
        conversationsTotal: 0,
        total: 0,
      });
      expect((await platformBadge(app, 'u2')).conversations).toEqual({ c1: 4 });
      expect(await list(t1)).toEqual([]);
      expect((await list(t2)).map((c) => c.id)).toEqual(['c1']);
      const before = await snapshot(['u1', 'u2', 'u3'], [t1, t2]);
      for (const id of ['c2', 'never-created']) {
        expectError(
          await platform(app, 'POST', `/v1/conversations/${id}/messages`, {
            body: { seq: 9, from: 'u3' },
          }),
          404,
          'UB_ERR_NOT_FOUND',
        );
        expectError(
          await platform(app, 'POST', `/v1/conversations/${id}/messages`, {
            body: { messages: [{ seq: 9, from: 'u3' }] },
          }),
          404,
          'UB_ERR_NOT_FOUND',
        );
      }
      // dissolving again, or an unknown conversation, is still 204
      await dissolve('c2');
      await dissolve('never-created');
      expect(await snapshot(['u1', 'u2', 'u3'], [t1, t2])).toEqual(before);
    });

    it('bad conversation input is 400 and changes nothing: ids, members, seqs, previews, batches', async () => {
      const t1 = await tokenFor('u1');
      await setMembers('c1', ['u1', 'u2']);
      await send('c1', { seq: 1, from: 'u2', preview: { text: 'kept' } });
      const before = await snapshot(['u1', 'u2'], [t1]);

      const badIds = ['bad%20id', 'x'.repeat(65), 'a%2Fb', '%C3%A9', 'a+b', '%00'];
      for (const bad of badIds) {
        const routes: [string, string, unknown?][] = [
          ['PUT', `/v1/conversations/${bad}/members`, { members: ['u1'] }],
          ['POST', `/v1/conversations/${bad}/members`, { members: ['u1'] }],
          ['DELETE', `/v1/conversations/${bad}/members/u1`],
          ['DELETE', `/v1/conversations/c1/members/${bad}`],
          ['DELETE', `/v1/conversations/${bad}`],
          ['POST', `/v1/conversations/${bad}/messages`, { seq: 2, from: 'u2' }],
        ];
        for (const [method, path, body] of routes) {
          expectError(await platform(app, method, path, { body }), 400, 'UB_ERR_BAD_ID');
        }
      }
      // a bad member id anywhere in the list refuses the whole call
      for (const members of [['u3', 'bad id'], [''], ['x'.repeat(65)]]) {
        for (const method of ['PUT', 'POST']) {
          expectError(
            await platform(app, method, '/v1/conversations/c1/members', { body: { members } }),
            400,
            'UB_ERR_BAD_ID',
          );
        }
      }
      for (const body of [{ members: 'u3' }, { members: [3] }, {}, ['u3'], { members: [], x: 1 }]) {
        for (const method of ['PUT', 'POST']) {
          expectError(
            await platform(app, method, '/v1/conversations/c1/members', { body }),
            400,
            'UB_ERR_BAD_REQUEST',
          );
        }
      }

      const post = (body: unknown) =>
        platform(app, 'POST', '/v1/conversations/c1/messages', { body });
      // seq not a positive integer
      for (const seq of [0, -1, 1.5, '2', null, 2 ** 53]) {
        expectBadInput(await post({ seq, from: 'u2' }), `seq ${JSON.stringify(seq)}`);
        expectBadInput(
          await post({
            messages: [
              { seq: 2, from: 'u2' },
              { seq, from: 'u2' },
            ],
          }),
          `batch with seq ${JSON.stringify(seq)}`,
        );
      }
      // from: an id
      expectError(await post({ seq: 2, from: 'bad id' }), 400, 'UB_ERR_BAD_ID');
      expectBadInput(await post({ seq: 2 }), 'no from');
      expectBadInput(await post({ seq: 2, from: 'u2', ts: -1 }), 'negative ts');
      expectBadInput(await post({ seq: 2, from: 'u2', extra: 1 }), 'an unknown field');
      // preview: an object of at most 1 KiB (UTF-8 bytes of its JSON text)
      const over = { t: 'x'.repeat(1017) }; // {"t":"…"} is 1025 bytes
      expect(Buffer.byteLength(JSON.stringify(over))).toBe(1025);
      const overMultibyte = { t: 'é'.repeat(600) }; // 608 characters, 1208 bytes
      for (const preview of [over, overMultibyte, 'text', 42, [1, 2], null]) {
        expectBadInput(
          await post({ seq: 2, from: 'u2', preview }),
          `preview ${JSON.stringify(preview).slice(0, 40)}`,
        );
        expectBadInput(
          await post({
            messages: [
              { seq: 2, from: 'u2' },
              { seq: 3, from: 'u2', preview },
            ],
          }),
          'a batch with a bad preview',
        );
      }
      // batches: 1 to 1000 messages
      const batch = (n: number) => ({
        messages: Array.from({ length: n }, (_, i) => ({ seq: i + 2, from: 'u2' })),
      });
      expectBadInput(await post(batch(1001)), 'a batch of 1001');
      expectBadInput(await post(batch(0)), 'an empty batch');
      expectError(
        await platform(app, 'POST', '/v1/conversations/c1/messages', { rawBody: '{"seq":' }),
        400,
        'UB_ERR_BAD_REQUEST',
      );
      expect(await snapshot(['u1', 'u2'], [t1])).toEqual(before);

      // the edges are accepted: a preview of exactly 1024 bytes, a batch of 1000
      const edge = { t: 'x'.repeat(1016) };
      await send('c1', { seq: 2, from: 'u2', preview: edge });
      expect((await list(t1))[0]!.preview).toEqual(edge);
      await send(
        'c1',
        batch(1000).messages.map((m) => ({ ...m, seq: m.seq + 1 })),
      );
      expect((await platformBadge(app, 'u1')).conversations).toEqual({ c1: 1002 });
    });

    it('GET /v1/conversations: newest lastTs first, ties by higher seq; limit; at most 100; preview exact', async () => {
      const t1 = await tokenFor('u1');
      const now = app.clock.now();
      const preview = {
        text: 'héllo 👋 "quoted" \\ <b>',
        n: 3,
        neg: -1.25,
        ok: true,
        none: null,
        nested: { z: [1, { y: 'x' }], a: {} },
        empty: '',
      };
      for (const c of ['old', 'a-tie-low', 'z-tie-high', 'silent', 'muted']) {
        await setMembers(c, ['u1', 'u2']);
      }
      await send('old', { seq: 50, from: 'u2', ts: now - 30_000 });
      await send('a-tie-low', { seq: 3, from: 'u2', ts: now - 1000 });
      await send('z-tie-high', [
        { seq: 8, from: 'u2', ts: now - 1000, preview },
        // an older seq arriving later changes neither lastTs nor preview
        { seq: 7, from: 'u2', ts: now, preview: { text: 'older' } },
      ]);
      // without ts: the server's now
      await send('muted', { seq: 1, from: 'u2', preview: { text: 'shh' } });
      await mute(t1, 'muted', true);

      const items = await list(t1);
      expect(items.map((c) => c.id)).toEqual(['muted', 'z-tie-high', 'a-tie-low', 'old', 'silent']);
      expect(items).toEqual([
        { id: 'muted', unread: 1, maxSeq: 1, lastTs: now, preview: { text: 'shh' }, muted: true },
        { id: 'z-tie-high', unread: 8, maxSeq: 8, lastTs: now - 1000, preview, muted: false },
        {
          id: 'a-tie-low',
          unread: 3,
          maxSeq: 3,
          lastTs: now - 1000,
          preview: null,
          muted: false,
        },
        { id: 'old', unread: 50, maxSeq: 50, lastTs: now - 30_000, preview: null, muted: false },
        { id: 'silent', unread: 0, maxSeq: 0, lastTs: 0, preview: null, muted: false },
      ]);
      // passed through exactly: the same JSON text, key order included
      const raw = await client(app, t1, 'GET', '/v1/conversations');
      expect(raw.text).toContain(JSON.stringify(preview));
      // the badge agrees with the list
      expect(badgeState(await myBadge(t1))).toMatchObject({
        conversations: { muted: 1, 'z-tie-high': 8, 'a-tie-low': 3, old: 50 },
        conversationsTotal: 61,
        total: 61,
      });
      // the sender sees unread 0 everywhere
      expect((await list(await tokenFor('u2'))).map((c) => [c.id, c.unread, c.muted])).toEqual([
        ['muted', 0, false],
        ['z-tie-high', 0, false],
        ['a-tie-low', 0, false],
        ['old', 0, false],
        ['silent', 0, false],
      ]);

      expect((await list(t1, '?limit=2')).map((c) => c.id)).toEqual(['muted', 'z-tie-high']);
      expect((await list(t1, '?limit=1')).map((c) => c.id)).toEqual(['muted']);
      expect(await list(t1, '?limit=100')).toEqual(items);
      // a non-member has an empty list
      expect(await list(await tokenFor('u9'))).toEqual([]);
      for (const bad of ['0', '-1', 'abc', '1.5', '']) {
        expectError(
          await client(app, t1, 'GET', `/v1/conversations?limit=${bad}`),
          400,
          'UB_ERR_BAD_REQUEST',
        );
      }

      // at most the 100 most recent
      const start = now - 1_000_000;
      for (let i = 0; i < 101; i++) {
        const id = `bulk${String(i).padStart(3, '0')}`;
        await setMembers(id, ['u1']);
        await send(id, { seq: 1, from: 'u2', ts: start + i });
      }
      const full = await list(t1);
      expect(full).toHaveLength(100);
      expect(full.slice(0, 5).map((c) => c.id)).toEqual(
        items
          .slice(0, 4)
          .map((c) => c.id)
          .concat('bulk100'),
      );
      // the 100 most recent: old (30 s ago) and bulk100…bulk005; bulk000…bulk004 and silent left out
      expect(full.at(-1)!.id).toBe('bulk005');
      expect((await list(t1, '?limit=1000')).map((c) => c.id)).toEqual(full.map((c) => c.id));
      expect((await list(t1, '?limit=100')).map((c) => c.id)).toEqual(full.map((c) => c.id));
    });
  });
});
