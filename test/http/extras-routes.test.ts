/**
 * System notices, red dots and conversations over real HTTP (shared spec api.md "Platform API",
 * "Client API"; docs/semantics.md "System notices", "Red dots", "Conversations", "The badge"):
 * every route's status and body, its authentication, its refusals (which change nothing), and the
 * badge after each kind of change compared with the definition. One in-process gateway per
 * test, on the memory engine and on a real redis-server.
 */
import type { BadgeExplanation, ConversationListItem } from '@bubble/badges';
import { beforeEach, describe, expect, it } from 'vitest';
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
  useApps,
  type App,
  type Badge,
  type Reply,
} from './support.js';

const ENGINES = ['memory', 'redis'] as const;

/** What the HTTP routes answer: the service's own types, as JSON. */
type ListItem = ConversationListItem;
type Explanation = BadgeExplanation;

const LIST_FIELDS = ['id', 'lastTs', 'maxSeq', 'muted', 'preview', 'unread'];

/** A 400 of the contract for a bad value: either of the two codes the spec names for it. */
function expectBadInput(reply: Reply, what: string): void {
  expect(reply.status, `${what}: ${reply.text}`).toBe(400);
  const code = (JSON.parse(reply.text) as { error: { code: string } }).error.code;
  expect(['UB_ERR_BAD_REQUEST', 'UB_ERR_BAD_ID'], what).toContain(code);
  expectError(reply, 400, code);
}

for (const engine of ENGINES) {
  describe(`notices, red dots and conversations over HTTP [${engine}]`, () => {
    const apps = useApps(engine, 'extras');
    let app: App;

    beforeEach(async () => {
      app = await apps.start();
    });

    // ------------------------------------------------------------------ calls

    async function expectStatus(
      reply: Promise<Reply> | Reply,
      status: number,
      what: string,
    ): Promise<Reply> {
      const done = await reply;
      expect(done.status, `${what}: ${done.text}`).toBe(status);
      return done;
    }

    /** A 204 (or 202) carries no body. */
    async function expectEmpty(reply: Promise<Reply>, status: number, what: string) {
      const done = await expectStatus(reply, status, what);
      expect(done.text, what).toBe('');
    }

    const publish = (id: number, ts?: number, target = app) =>
      expectEmpty(
        platform(target, 'POST', '/v1/notices', { body: ts === undefined ? { id } : { id, ts } }),
        202,
        `publish ${id}`,
      );
    const withdraw = (id: number, target = app) =>
      expectEmpty(platform(target, 'DELETE', `/v1/notices/${id}`), 204, `withdraw ${id}`);
    const mark = (name: string, ts?: number) =>
      expectEmpty(
        platform(app, 'PUT', `/v1/reddots/${name}`, ts === undefined ? {} : { body: { ts } }),
        204,
        `mark ${name}`,
      );
    const clear = (name: string) =>
      expectEmpty(platform(app, 'DELETE', `/v1/reddots/${name}`), 204, `clear ${name}`);
    const setMembers = (conversation: string, members: string[], target = app) =>
      expectEmpty(
        platform(target, 'PUT', `/v1/conversations/${conversation}/members`, {
          body: { members },
        }),
        204,
        `PUT members of ${conversation}`,
      );
    const addMembers = (conversation: string, members: string[]) =>
      expectEmpty(
        platform(app, 'POST', `/v1/conversations/${conversation}/members`, { body: { members } }),
        204,
        `POST members of ${conversation}`,
      );
    const leave = (conversation: string, user: string) =>
      expectEmpty(
        platform(app, 'DELETE', `/v1/conversations/${conversation}/members/${user}`),
        204,
        `${user} leaves ${conversation}`,
      );
    const dissolve = (conversation: string) =>
      expectEmpty(
        platform(app, 'DELETE', `/v1/conversations/${conversation}`),
        204,
        `dissolve ${conversation}`,
      );

    interface MessageIn {
      seq: number;
      from: string;
      ts?: number;
      preview?: Record<string, unknown>;
    }
    /** One message or a batch; 202 {accepted: n}. */
    async function send(
      conversation: string,
      messages: MessageIn | MessageIn[],
      target = app,
    ): Promise<void> {
      const body = Array.isArray(messages) ? { messages } : messages;
      const reply = await expectStatus(
        platform(target, 'POST', `/v1/conversations/${conversation}/messages`, { body }),
        202,
        `messages to ${conversation}`,
      );
      expect(parseJson(reply)).toEqual({
        accepted: Array.isArray(messages) ? messages.length : 1,
      });
    }

    async function myBadge(token: string, target = app): Promise<Badge> {
      const reply = await expectStatus(client(target, token, 'GET', '/v1/badge'), 200, 'badge');
      return parseJson(reply) as Badge;
    }

    async function read(token: string, body: unknown, target = app): Promise<Badge> {
      const reply = await expectStatus(
        client(target, token, 'POST', '/v1/badge/read', { body }),
        200,
        `read ${JSON.stringify(body)}`,
      );
      return parseJson(reply) as Badge;
    }

    async function list(token: string, query = '', target = app): Promise<ListItem[]> {
      const reply = await expectStatus(
        client(target, token, 'GET', `/v1/conversations${query}`),
        200,
        `list${query}`,
      );
      const items = parseJson(reply) as ListItem[];
      expect(Array.isArray(items)).toBe(true);
      for (const item of items) expect(Object.keys(item).sort()).toEqual(LIST_FIELDS);
      return items;
    }

    const mute = (token: string, conversation: string, muted: boolean) =>
      expectEmpty(
        client(app, token, 'PUT', `/v1/conversations/${conversation}/mute`, { body: { muted } }),
        204,
        `mute ${conversation} ${muted}`,
      );

    async function explain(user: string, target = app): Promise<Explanation> {
      const reply = await expectStatus(
        platform(target, 'GET', `/v1/users/${user}/badge/explain`),
        200,
        `explain ${user}`,
      );
      return parseJson(reply) as Explanation;
    }

    /** Everything a refused call must leave as it was, for `users` (none of them is seen). */
    async function snapshot(users: string[], tokens: string[] = []) {
      const badges = await Promise.all(users.map((user) => platformBadge(app, user)));
      const lists = await Promise.all(tokens.map((token) => list(token)));
      const explained = await Promise.all(
        users.map(async (user) => {
          const e = await explain(user);
          return { ...e, stored: null };
        }),
      );
      return { badges, lists, explained };
    }

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
        for (const body of badBodies) {
          expectBadInput(
            await platform(app, 'POST', '/v1/notices', { body }),
            `publish ${JSON.stringify(body)}`,
          );
        }
        expectError(
          await platform(app, 'POST', '/v1/notices', { rawBody: '{"id":3' }),
          400,
          'UB_ERR_BAD_REQUEST',
        );
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
        for (const body of [{ ts: -1 }, { ts: 'now' }, { ts: 1.5 }, { when: 1 }, [1], 'x']) {
          expectBadInput(
            await platform(app, 'PUT', '/v1/reddots/other', { body }),
            `mark ${JSON.stringify(body)}`,
          );
        }
        expectError(
          await platform(app, 'PUT', '/v1/reddots/other', { rawBody: '{"ts":' }),
          400,
          'UB_ERR_BAD_REQUEST',
        );
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
        expect((await read(t1, { scope: 'conversation', id: 'c1', seq: 1 })).conversations).toEqual(
          { c1: 3 },
        );
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
        for (const body of [
          { members: 'u3' },
          { members: [3] },
          {},
          ['u3'],
          { members: [], x: 1 },
        ]) {
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
        expect(items.map((c) => c.id)).toEqual([
          'muted',
          'z-tie-high',
          'a-tie-low',
          'old',
          'silent',
        ]);
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
      it('every new platform route refuses a missing or wrong X-Api-Key with 401 and changes nothing', async () => {
        const t1 = await tokenFor('u1');
        await myBadge(t1);
        await publish(1);
        await mark('r1');
        await setMembers('c1', ['u1', 'u2']);
        await send('c1', { seq: 1, from: 'u2' });
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
        const t1 = await tokenFor('u1');
        await myBadge(t1);
        await publish(1);
        await mark('r1');
        await setMembers('c1', ['u1', 'u2']);
        await send('c1', { seq: 1, from: 'u2' });
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
            expectError(
              await call(app, method, path, { headers, body }),
              401,
              'UB_ERR_UNAUTHORIZED',
            );
          }
        }
        expect(await snapshot(['u1'], [t1])).toEqual(before);
        expect(before.badges[0]).toMatchObject({ notices: 1, reddots: ['r1'], total: 2 });
      });
    });
  });
}
