/**
 * System notices, red dots and conversations over real HTTP (shared spec api.md "Platform API",
 * "Client API"; docs/semantics.md "System notices", "Red dots", "Conversations", "The badge"):
 * every route's status and body, its authentication, its refusals (which change nothing), and the
 * badge after each kind of change compared with the definition. One in-process gateway per
 * test, on the memory engine and on a real redis-server. This file: conversations: unread, reads and mute.
 */
import { describe, expect, it } from 'vitest';
import { badgeState } from '../support/badges.js';
import {
  client,
  expectError,
  platformBadge,
  tokenFor,
  app,
  describeOnEachEngine,
} from './support.js';
import { expectBadInput, extrasCalls } from './extras-routes-support.js';

describeOnEachEngine('notices, red dots and conversations over HTTP', 'extras', () => {
  const { publish, setMembers, send, myBadge, read, list, mute, explain, snapshot } = extrasCalls(
    () => app,
  );

  // ------------------------------------------------------------------ conversations

  describe('conversations', () => {
    it('unread = maxSeq − readSeq; the sender is not counted; ingest is idempotent on seq', async () => {
      const [t1, t2, t3] = (await Promise.all(['u1', 'u2', 'u3'].map((u) => tokenFor(u)))) as [
        string,
        string,
        string,
      ];
      await setMembers('c1', ['u1', 'u2', 'u3']);
      // a new conversation counts nothing and lists nothing in the badge
      expect(badgeState(await myBadge(t1))).toMatchObject({
        conversations: {},
        conversationsTotal: 0,
        total: 0,
      });

      await send('c1', { seq: 1, from: 'u2', preview: { text: 'hi' } });
      const one = await myBadge(t1);
      expect(badgeState(one)).toMatchObject({
        conversations: { c1: 1 },
        conversationsTotal: 1,
        total: 1,
        display: '1',
      });
      // the sender's own message does not count for them
      expect(badgeState(await myBadge(t2))).toMatchObject({ conversations: {}, total: 0 });
      expect((await myBadge(t3)).conversations).toEqual({ c1: 1 });

      await send('c1', [
        { seq: 2, from: 'u3' },
        { seq: 3, from: 'u2' },
      ]);
      expect(badgeState(await myBadge(t1))).toMatchObject({
        conversations: { c1: 3 },
        conversationsTotal: 3,
        total: 3,
      });
      expect((await myBadge(t2)).conversations).toEqual({});
      expect((await myBadge(t3)).conversations).toEqual({ c1: 1 });

      // the same seqs again (whatever else they say) change nothing
      const before = await Promise.all([t1, t2, t3].map((t) => myBadge(t)));
      // (a retry carries the same sender; another ts or preview is ignored: the first wins)
      await send('c1', { seq: 3, from: 'u2', ts: app.clock.now() - 1, preview: { x: 1 } });
      await send('c1', [
        { seq: 1, from: 'u2' },
        { seq: 2, from: 'u3' },
      ]);
      const afterDup = await Promise.all([t1, t2, t3].map((t) => myBadge(t)));
      expect(afterDup.map(badgeState)).toEqual(before.map(badgeState));

      // a message from someone who is not a member counts for every member
      await send('c1', { seq: 4, from: 'stranger' });
      expect((await myBadge(t1)).conversations).toEqual({ c1: 4 });
      expect((await myBadge(t2)).conversations).toEqual({ c1: 1 });
      // a sender's message reads everything below it for them
      await send('c1', { seq: 5, from: 'u3' });
      expect((await myBadge(t3)).conversations).toEqual({});

      // a second conversation adds up
      await setMembers('c2', ['u1', 'u2']);
      await send('c2', [
        { seq: 10, from: 'u2' },
        { seq: 11, from: 'u2' },
      ]);
      expect(badgeState(await myBadge(t1))).toMatchObject({
        conversations: { c1: 5, c2: 11 },
        conversationsTotal: 16,
        total: 16,
      });
      expect(badgeState(await platformBadge(app, 'u2'))).toMatchObject({
        conversations: { c1: 2 },
        conversationsTotal: 2,
      });

      // a read of scope all reads every conversation; the next message counts again
      expect(badgeState(await read(t1, { scope: 'all' }))).toMatchObject({
        conversations: {},
        conversationsTotal: 0,
        total: 0,
      });
      expect((await platformBadge(app, 'u2')).conversations).toEqual({ c1: 2 });
      await send('c2', { seq: 12, from: 'u2' });
      expect((await myBadge(t1)).conversations).toEqual({ c2: 1 });
    });

    it('a read with seq n leaves maxSeq − n, is clamped to maxSeq, never moves back; 403 for a non-member', async () => {
      const [t1, t2, outsider] = (await Promise.all(
        ['u1', 'u2', 'u9'].map((u) => tokenFor(u)),
      )) as [string, string, string];
      await setMembers('c1', ['u1', 'u2']);
      await send(
        'c1',
        [1, 2, 3, 4, 5].map((seq) => ({ seq, from: 'u2' })),
      );
      expect((await myBadge(t1)).conversations).toEqual({ c1: 5 });

      const r2 = await read(t1, { scope: 'conversation', id: 'c1', seq: 2 });
      expect(badgeState(r2)).toMatchObject({ conversations: { c1: 3 }, total: 3 });
      // an older seq does not move the cursor back
      expect((await read(t1, { scope: 'conversation', id: 'c1', seq: 1 })).conversations).toEqual({
        c1: 3,
      });
      // a seq beyond maxSeq reads up to maxSeq only: the next message still counts
      expect(
        badgeState(await read(t1, { scope: 'conversation', id: 'c1', seq: 100 })),
      ).toMatchObject({ conversations: {}, conversationsTotal: 0, total: 0 });
      await send('c1', { seq: 6, from: 'u2' });
      expect((await myBadge(t1)).conversations).toEqual({ c1: 1 });
      // without seq: up to maxSeq
      await send('c1', { seq: 7, from: 'u2' });
      expect((await read(t1, { scope: 'conversation', id: 'c1' })).conversations).toEqual({});
      const e = await explain('u1');
      expect(e.conversations.list).toEqual([
        { id: 'c1', maxSeq: 7, readSeq: 7, unread: 0, muted: false, counted: true },
      ]);

      // a read by a non-member, or of an unknown conversation: 403, nothing changes
      const before = await snapshot(['u1', 'u2', 'u9']);
      for (const [token, id] of [
        [outsider, 'c1'],
        [t2, 'nope'],
      ] as const) {
        expectError(
          await client(app, token, 'POST', '/v1/badge/read', {
            body: { scope: 'conversation', id, seq: 7 },
          }),
          403,
          'UB_ERR_FORBIDDEN',
        );
      }
      // bad reads: 400
      for (const body of [
        { scope: 'conversation', id: 'c1', seq: 0 },
        { scope: 'conversation', id: 'c1', seq: -1 },
        { scope: 'conversation', id: 'c1', seq: 1.5 },
        { scope: 'conversation', id: 'c1', seq: '3' },
        { scope: 'conversation', id: 'c1', seq: 2 ** 53 },
        { scope: 'conversation' },
        { scope: 'conversation', id: 'c1', extra: 1 },
      ]) {
        expectBadInput(
          await client(app, t2, 'POST', '/v1/badge/read', { body }),
          `read ${JSON.stringify(body)}`,
        );
      }
      for (const id of ['bad id', '', 'x'.repeat(65)]) {
        expectError(
          await client(app, t2, 'POST', '/v1/badge/read', {
            body: { scope: 'conversation', id },
          }),
          400,
          'UB_ERR_BAD_ID',
        );
      }
      // a refused read does not see the user either (docs/semantics.md: the first end-user call
      // that returns a badge does): u2 and u9, never answered a badge, start at 0 afterwards
      expect(await snapshot(['u1', 'u2', 'u9'])).toEqual(before);
      await publish(1);
      expect((await myBadge(outsider)).notices).toBe(0);
      expect((await myBadge(t2)).notices).toBe(0);
      // (u1 was seen by its first successful read, before the notice)
      expect((await myBadge(t1)).notices).toBe(1);
    });

    it('mute keeps conversations[c] but leaves it out of conversationsTotal and total; 403 for a non-member', async () => {
      const [t1, outsider] = (await Promise.all(['u1', 'u9'].map((u) => tokenFor(u)))) as [
        string,
        string,
      ];
      await setMembers('c1', ['u1', 'u2']);
      await setMembers('c2', ['u1', 'u2']);
      await send('c1', [
        { seq: 1, from: 'u2' },
        { seq: 2, from: 'u2' },
      ]);
      await send('c2', { seq: 1, from: 'u2' });
      const loud = await myBadge(t1);
      expect(badgeState(loud)).toMatchObject({
        conversations: { c1: 2, c2: 1 },
        conversationsTotal: 3,
        total: 3,
      });

      await mute(t1, 'c1', true);
      const quiet = await myBadge(t1);
      expect(badgeState(quiet)).toMatchObject({
        conversations: { c1: 2, c2: 1 },
        conversationsTotal: 1,
        total: 1,
        display: '1',
      });
      expect(quiet.version).toBeGreaterThan(loud.version);
      expect((await list(t1)).find((c) => c.id === 'c1')).toMatchObject({
        muted: true,
        unread: 2,
      });
      // the other member is not muted
      expect((await platformBadge(app, 'u2')).conversationsTotal).toBe(0);
      await send('c1', { seq: 3, from: 'u1' });
      expect((await platformBadge(app, 'u2')).conversations).toEqual({ c1: 1 });
      // a muted conversation still counts its own messages
      await send('c1', { seq: 4, from: 'u2' });
      expect(badgeState(await myBadge(t1))).toMatchObject({
        conversations: { c1: 1, c2: 1 },
        conversationsTotal: 1,
        total: 1,
      });
      // muting twice is idempotent; the mute survives a read and a message
      await mute(t1, 'c1', true);
      expect((await read(t1, { scope: 'conversation', id: 'c2' })).total).toBe(0);
      const e = await explain('u1');
      expect(e.conversations.list.find((c) => c.id === 'c1')).toMatchObject({
        unread: 1,
        muted: true,
        counted: false,
      });
      expect(e.conversations.contribution).toBe(0);

      await mute(t1, 'c1', false);
      expect(badgeState(await myBadge(t1))).toMatchObject({
        conversations: { c1: 1 },
        conversationsTotal: 1,
        total: 1,
      });

      // a non-member (or an unknown conversation): 403, nothing changes
      const before = await snapshot(['u1', 'u2']);
      for (const [token, id] of [
        [outsider, 'c1'],
        [t1, 'nope'],
      ] as const) {
        expectError(
          await client(app, token, 'PUT', `/v1/conversations/${id}/mute`, {
            body: { muted: true },
          }),
          403,
          'UB_ERR_FORBIDDEN',
        );
      }
      for (const body of [{ muted: 'yes' }, { muted: 1 }, {}, { muted: true, x: 1 }, [true]]) {
        expectBadInput(
          await client(app, t1, 'PUT', '/v1/conversations/c1/mute', { body }),
          `mute ${JSON.stringify(body)}`,
        );
      }
      expectError(
        await client(app, t1, 'PUT', '/v1/conversations/c1/mute'),
        400,
        'UB_ERR_BAD_REQUEST',
      );
      for (const bad of ['bad%20id', 'x'.repeat(65), '%C3%A9']) {
        expectError(
          await client(app, t1, 'PUT', `/v1/conversations/${bad}/mute`, {
            body: { muted: true },
          }),
          400,
          'UB_ERR_BAD_ID',
        );
      }
      expect(await snapshot(['u1', 'u2'])).toEqual(before);
    });
  });
});
