/**
 * The HTTP contract (shared spec api.md, docs/semantics.md "Feed bubble") driven over real HTTP
 * against an in-process gateway, once per storage engine.
 */
import { DAY_MS } from '@bubble/protocol';
import { RedisStore } from '@bubble/store';
import { startRedisServer, uniquePrefix, waitFor } from '@bubble/test-utils';
import { SignJWT } from 'jose';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  API_KEY,
  JWT_SECRET,
  MIB,
  RawConnection,
  client,
  call,
  expectError,
  follows,
  parseJson,
  platform,
  platformBadge,
  tokenFor,
  useApps,
  type App,
  type Badge,
} from './support.js';

const ENGINES = ['memory', 'redis'] as const;

const BADGE_FIELDS = [
  'user',
  'epoch',
  'version',
  'feed',
  'notices',
  'conversations',
  'conversationsTotal',
  'reddots',
  'total',
  'display',
  'computedAt',
].sort();

const secretKey = new TextEncoder().encode(JWT_SECRET);
const nowSeconds = (): number => Math.floor(Date.now() / 1000);
const b64url = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');

for (const engine of ENGINES) {
  describe(`HTTP gateway routes [${engine}]`, () => {
    const apps = useApps(engine, 'http');
    let app: App;

    beforeEach(async () => {
      app = await apps.start();
    });

    /** Follows `authors` for `user` and checks the 204s. */
    async function followAll(user: string, authors: string[]): Promise<void> {
      for (const author of authors) {
        const reply = await platform(app, 'PUT', `/v1/users/${user}/follows/${author}`);
        expect(reply.status).toBe(204);
      }
    }

    async function ingest(
      body: unknown,
      target: App = app,
    ): Promise<{ accepted: number; ignored: number }> {
      const reply = await platform(target, 'POST', '/v1/posts', { body });
      expect(reply.status, reply.text).toBe(202);
      return parseJson(reply) as { accepted: number; ignored: number };
    }

    async function myBadge(token: string, target: App = app): Promise<Badge> {
      const reply = await client(target, token, 'GET', '/v1/badge');
      expect(reply.status, reply.text).toBe(200);
      return parseJson(reply) as Badge;
    }

    // ---------------------------------------------------------------- follows

    describe('follows', () => {
      it('PUT and DELETE one follow answer 204 with no body; GET lists the authors sorted', async () => {
        for (const author of ['zed', 'amy', 'Bob', 'm.n:o@p-q_r']) {
          const reply = await platform(
            app,
            'PUT',
            `/v1/users/u1/follows/${encodeURIComponent(author)}`,
          );
          expect(reply.status).toBe(204);
          expect(reply.text).toBe('');
        }
        // following again is idempotent
        expect((await platform(app, 'PUT', '/v1/users/u1/follows/amy')).status).toBe(204);
        const list = await platform(app, 'GET', '/v1/users/u1/follows');
        expect(list.status).toBe(200);
        expect(parseJson(list)).toEqual({ authors: ['Bob', 'amy', 'm.n:o@p-q_r', 'zed'] });

        const removed = await platform(app, 'DELETE', '/v1/users/u1/follows/amy');
        expect(removed.status).toBe(204);
        expect(removed.text).toBe('');
        // unfollowing someone not followed is still 204
        expect((await platform(app, 'DELETE', '/v1/users/u1/follows/nobody')).status).toBe(204);
        expect(await follows(app, 'u1')).toEqual(['Bob', 'm.n:o@p-q_r', 'zed']);
        // a user who follows nobody
        expect(await follows(app, 'u2')).toEqual([]);
      });

      it('self-follow is 422 UB_ERR_SELF_FOLLOW and stores nothing', async () => {
        expectError(
          await platform(app, 'PUT', '/v1/users/u1/follows/u1'),
          422,
          'UB_ERR_SELF_FOLLOW',
        );
        expect(await follows(app, 'u1')).toEqual([]);
      });

      it('the follow cap (5 here) refuses the 6th author with 409 UB_ERR_FOLLOW_CAP', async () => {
        await followAll('u1', ['a1', 'a2', 'a3', 'a4', 'a5']);
        expectError(
          await platform(app, 'PUT', '/v1/users/u1/follows/a6'),
          409,
          'UB_ERR_FOLLOW_CAP',
        );
        // re-following one already followed at the cap is not "one more"
        expect((await platform(app, 'PUT', '/v1/users/u1/follows/a3')).status).toBe(204);
        expect(await follows(app, 'u1')).toEqual(['a1', 'a2', 'a3', 'a4', 'a5']);
        // after an unfollow there is room again
        expect((await platform(app, 'DELETE', '/v1/users/u1/follows/a1')).status).toBe(204);
        expect((await platform(app, 'PUT', '/v1/users/u1/follows/a6')).status).toBe(204);
        expect(await follows(app, 'u1')).toEqual(['a2', 'a3', 'a4', 'a5', 'a6']);
      });

      it.each([
        ['a space', 'bad%20id'],
        ['65 characters', 'x'.repeat(65)],
        ['an encoded slash', 'a%2Fb'],
        ['a non-ASCII letter', '%C3%A9t%C3%A9'],
        ['a plus sign', 'a+b'],
        ['an encoded NUL', '%00'],
        ['a malformed escape', '%E0%A4%A'],
      ])('an id with %s is 400 UB_ERR_BAD_ID, in any position', async (_what, bad) => {
        await followAll('u1', ['a1']);
        expectError(
          await platform(app, 'PUT', `/v1/users/${bad}/follows/a2`),
          400,
          'UB_ERR_BAD_ID',
        );
        expectError(
          await platform(app, 'PUT', `/v1/users/u1/follows/${bad}`),
          400,
          'UB_ERR_BAD_ID',
        );
        expectError(
          await platform(app, 'DELETE', `/v1/users/u1/follows/${bad}`),
          400,
          'UB_ERR_BAD_ID',
        );
        expectError(
          await platform(app, 'DELETE', `/v1/users/${bad}/follows/a1`),
          400,
          'UB_ERR_BAD_ID',
        );
        expectError(await platform(app, 'GET', `/v1/users/${bad}/follows`), 400, 'UB_ERR_BAD_ID');
        expectError(
          await platform(app, 'PUT', `/v1/users/${bad}/follows`, { body: { authors: ['a1'] } }),
          400,
          'UB_ERR_BAD_ID',
        );
        expectError(await platform(app, 'GET', `/v1/users/${bad}/badge`), 400, 'UB_ERR_BAD_ID');
        expect(await follows(app, 'u1')).toEqual(['a1']);
      });

      it('a 64-character id is valid', async () => {
        const long = 'y'.repeat(64);
        expect((await platform(app, 'PUT', `/v1/users/${long}/follows/a1`)).status).toBe(204);
        expect(await follows(app, long)).toEqual(['a1']);
      });

      it('PUT /follows replaces the whole set (204), de-duplicating', async () => {
        await followAll('u1', ['old1', 'old2']);
        const reply = await platform(app, 'PUT', '/v1/users/u1/follows', {
          body: { authors: ['c', 'a', 'b', 'a'] },
        });
        expect(reply.status).toBe(204);
        expect(reply.text).toBe('');
        expect(await follows(app, 'u1')).toEqual(['a', 'b', 'c']);
        // six entries but five distinct authors: within the cap
        const dup = await platform(app, 'PUT', '/v1/users/u1/follows', {
          body: { authors: ['a1', 'a2', 'a3', 'a4', 'a5', 'a5'] },
        });
        expect(dup.status).toBe(204);
        expect(await follows(app, 'u1')).toEqual(['a1', 'a2', 'a3', 'a4', 'a5']);
        // an empty set clears
        expect(
          (await platform(app, 'PUT', '/v1/users/u1/follows', { body: { authors: [] } })).status,
        ).toBe(204);
        expect(await follows(app, 'u1')).toEqual([]);
      });

      it('a refused replace changes nothing (cap 409, self 422, bad author 400 BAD_ID, bad shape 400)', async () => {
        await followAll('u1', ['keep1', 'keep2']);
        const put = (body: unknown) => platform(app, 'PUT', '/v1/users/u1/follows', { body });

        expectError(
          await put({ authors: ['a1', 'a2', 'a3', 'a4', 'a5', 'a6'] }),
          409,
          'UB_ERR_FOLLOW_CAP',
        );
        expectError(await put({ authors: ['a1', 'u1'] }), 422, 'UB_ERR_SELF_FOLLOW');
        // an invalid id is UB_ERR_BAD_ID wherever it appears (docs/semantics.md "Identifiers")
        expectError(await put({ authors: ['a1', 'bad id'] }), 400, 'UB_ERR_BAD_ID');
        expectError(await put({ authors: ['x'.repeat(65)] }), 400, 'UB_ERR_BAD_ID');
        expectError(await put({ authors: [''] }), 400, 'UB_ERR_BAD_ID');
        // not an id at all (wrong type), or the wrong shape: a schema error
        expectError(await put({ authors: [42] }), 400, 'UB_ERR_BAD_REQUEST');
        expectError(await put({ authors: 'a1' }), 400, 'UB_ERR_BAD_REQUEST');
        expectError(await put(['a1']), 400, 'UB_ERR_BAD_REQUEST');
        expectError(await put({}), 400, 'UB_ERR_BAD_REQUEST');
        expectError(await put({ authors: ['a1'], extra: true }), 400, 'UB_ERR_BAD_REQUEST');
        expectError(
          await platform(app, 'PUT', '/v1/users/u1/follows', { rawBody: '{"authors":[' }),
          400,
          'UB_ERR_BAD_REQUEST',
        );
        expectError(await platform(app, 'PUT', '/v1/users/u1/follows'), 400, 'UB_ERR_BAD_REQUEST');

        expect(await follows(app, 'u1')).toEqual(['keep1', 'keep2']);
      });
    });

    // ---------------------------------------------------------------- posts

    describe('posts', () => {
      it('POST /v1/posts takes one post or a batch: 202 {accepted, ignored}, counted in the badge', async () => {
        const token = await tokenFor('u1');
        await followAll('u1', ['a1', 'a2']);
        const now = app.clock.now();

        const single = await platform(app, 'POST', '/v1/posts', {
          body: { author: 'a1', id: 'p1', ts: now - 1000 },
        });
        expect(single.status).toBe(202);
        expect(parseJson(single)).toEqual({ accepted: 1, ignored: 0 });

        expect(
          await ingest({
            posts: [
              { author: 'a2', id: 'p1', ts: now - 3000 },
              { author: 'a2', id: 'p2', ts: now },
              { author: 'stranger', id: 'p1', ts: now - 10 },
            ],
          }),
        ).toEqual({ accepted: 3, ignored: 0 });

        expect((await myBadge(token)).feed).toBe(3);
        // follow changes count at the next computation, over the current follows
        expect((await platform(app, 'DELETE', '/v1/users/u1/follows/a2')).status).toBe(204);
        expect((await myBadge(token)).feed).toBe(1);
        expect((await platform(app, 'PUT', '/v1/users/u1/follows/stranger')).status).toBe(204);
        expect((await myBadge(token)).feed).toBe(2);
      });

      it('ingest is idempotent on (author, id): a duplicate does not count twice, the first ts wins', async () => {
        const token = await tokenFor('u1');
        await followAll('u1', ['a1']);
        const now = app.clock.now();
        await ingest({ author: 'a1', id: 'p1', ts: now - 5000 });
        const again = await ingest({ author: 'a1', id: 'p1', ts: now - 5000 });
        expect(again.accepted + again.ignored).toBe(1);
        await ingest({ posts: [{ author: 'a1', id: 'p1', ts: now - 1000 }] });
        expect((await myBadge(token)).feed).toBe(1);
        // a read up to now - 3000 hides the post only if its ts is still the first one (now - 5000)
        const read = await client(app, token, 'POST', '/v1/badge/read', {
          body: { scope: 'feed', upTo: now - 3000 },
        });
        expect(read.status).toBe(200);
        expect((parseJson(read) as Badge).feed).toBe(0);

        // within one batch too, the first occurrence wins
        await ingest({
          posts: [
            { author: 'a1', id: 'p2', ts: now - 4000 },
            { author: 'a1', id: 'p2', ts: now - 1000 },
          ],
        });
        expect((await myBadge(token)).feed).toBe(0);
      });

      it('a post older than the lookback is accepted as ignored and not counted', async () => {
        const token = await tokenFor('u1');
        await followAll('u1', ['a1']);
        const now = app.clock.now();
        expect(await ingest({ author: 'a1', id: 'old', ts: now - 8 * DAY_MS })).toEqual({
          accepted: 0,
          ignored: 1,
        });
        expect(
          await ingest({
            posts: [
              { author: 'a1', id: 'old2', ts: now - 7 * DAY_MS - 1 },
              { author: 'a1', id: 'edge', ts: now - 7 * DAY_MS },
              { author: 'a1', id: 'inside', ts: now - 7 * DAY_MS + 1 },
              { author: 'a1', id: 'new', ts: now - DAY_MS },
            ],
          }),
        ).toEqual({ accepted: 2, ignored: 2 });
        expect((await myBadge(token)).feed).toBe(2);
        // the window slides with the clock
        app.clock.advance(1);
        expect((await myBadge(token)).feed).toBe(1);
      });

      it('a ts more than 60 s ahead is 422 UB_ERR_FUTURE_TS and nothing of the batch is stored', async () => {
        const token = await tokenFor('u1');
        await followAll('u1', ['a1']);
        const now = app.clock.now();
        const before = await myBadge(token);
        expect(before.feed).toBe(0);

        expectError(
          await platform(app, 'POST', '/v1/posts', {
            body: { author: 'a1', id: 'f1', ts: now + 60_001 },
          }),
          422,
          'UB_ERR_FUTURE_TS',
        );
        expectError(
          await platform(app, 'POST', '/v1/posts', {
            body: {
              posts: [
                { author: 'a1', id: 'ok1', ts: now - 1000 },
                { author: 'a1', id: 'f2', ts: now + 3_600_000 },
              ],
            },
          }),
          422,
          'UB_ERR_FUTURE_TS',
        );
        // once the clock has caught up, the refused posts still do not exist
        app.clock.advance(2 * 3_600_000);
        const after = await myBadge(token);
        expect(after.feed).toBe(0);
        expect(after.version).toBe(before.version);

        // exactly 60 s ahead is allowed, and counts once its time has come
        const edge = app.clock.now() + 60_000;
        expect(await ingest({ author: 'a1', id: 'edge', ts: edge })).toEqual({
          accepted: 1,
          ignored: 0,
        });
        expect((await myBadge(token)).feed).toBe(0);
        app.clock.advance(60_000);
        expect((await myBadge(token)).feed).toBe(1);
      });

      it('a batch of 1000 is accepted, 1001 is 400 UB_ERR_BAD_REQUEST and stores nothing', async () => {
        const token = await tokenFor('u1');
        await followAll('u1', ['a1', 'a2']);
        const ts = app.clock.now() - 1000;
        const batch = (author: string, n: number) => ({
          posts: Array.from({ length: n }, (_, i) => ({ author, id: `p${i}`, ts })),
        });
        expectError(
          await platform(app, 'POST', '/v1/posts', { body: batch('a2', 1001) }),
          400,
          'UB_ERR_BAD_REQUEST',
        );
        expect((await myBadge(token)).feed).toBe(0);
        expect(await ingest(batch('a1', 1000))).toEqual({ accepted: 1000, ignored: 0 });
        expect((await myBadge(token)).feed).toBe(1000);
      });

      it('malformed posts are 400 and store nothing', async () => {
        const token = await tokenFor('u1');
        await followAll('u1', ['a1']);
        const ts = app.clock.now() - 1000;
        const post = (body: unknown) => platform(app, 'POST', '/v1/posts', { body });

        expectError(await post({ author: 'bad id', id: 'p1', ts }), 400, 'UB_ERR_BAD_ID');
        expectError(
          await post({
            posts: [
              { author: 'a1', id: 'p1', ts },
              { author: 'a1', id: 'p/2', ts },
            ],
          }),
          400,
          'UB_ERR_BAD_ID',
        );
        expectError(
          await post({ author: 'a1', id: 'p1', ts, user: 'u1' }),
          400,
          'UB_ERR_BAD_REQUEST',
        );
        expectError(await post({ author: 'a1', id: 'p1' }), 400, 'UB_ERR_BAD_REQUEST');
        expectError(
          await post({ author: 'a1', id: 'p1', ts: String(ts) }),
          400,
          'UB_ERR_BAD_REQUEST',
        );
        expectError(
          await post({ author: 'a1', id: 'p1', ts: ts + 0.5 }),
          400,
          'UB_ERR_BAD_REQUEST',
        );
        expectError(await post({ author: 'a1', id: 'p1', ts: -1 }), 400, 'UB_ERR_BAD_REQUEST');
        expectError(await post({ posts: [] }), 400, 'UB_ERR_BAD_REQUEST');
        expectError(await post({ posts: {} }), 400, 'UB_ERR_BAD_REQUEST');
        expectError(await post([{ author: 'a1', id: 'p1', ts }]), 400, 'UB_ERR_BAD_REQUEST');
        expectError(
          await platform(app, 'POST', '/v1/posts', { rawBody: '{"author":"a1",' }),
          400,
          'UB_ERR_BAD_REQUEST',
        );

        expect((await myBadge(token)).feed).toBe(0);
      });

      it('DELETE /v1/posts/{author}/{id} is 204, also for an unknown post, and the post stops counting', async () => {
        const token = await tokenFor('u1');
        await followAll('u1', ['a1']);
        const now = app.clock.now();
        await ingest({
          posts: [
            { author: 'a1', id: 'p1', ts: now - 2000 },
            { author: 'a1', id: 'p2', ts: now - 1000 },
          ],
        });
        expect((await myBadge(token)).feed).toBe(2);

        const deleted = await platform(app, 'DELETE', '/v1/posts/a1/p1');
        expect(deleted.status).toBe(204);
        expect(deleted.text).toBe('');
        expect((await myBadge(token)).feed).toBe(1);

        expect((await platform(app, 'DELETE', '/v1/posts/a1/never-posted')).status).toBe(204);
        expect((await platform(app, 'DELETE', '/v1/posts/nobody/p1')).status).toBe(204);
        expect((await platform(app, 'DELETE', '/v1/posts/a1/p1')).status).toBe(204);
        expect((await myBadge(token)).feed).toBe(1);
        // a late or retried ingest does not bring a deleted post back
        await ingest({ author: 'a1', id: 'p1', ts: now - 2000 });
        expect((await myBadge(token)).feed).toBe(1);

        expectError(await platform(app, 'DELETE', '/v1/posts/a1/bad%20id'), 400, 'UB_ERR_BAD_ID');
        expectError(await platform(app, 'DELETE', '/v1/posts/a%2Fb/p2'), 400, 'UB_ERR_BAD_ID');
        expect((await myBadge(token)).feed).toBe(1);
      });
    });

    // ---------------------------------------------------------------- client badge

    describe('GET /v1/badge', () => {
      it('answers 200 with every field of the contract', async () => {
        const token = await tokenFor('u1');
        await followAll('u1', ['a1']);
        await ingest({ author: 'a1', id: 'p1', ts: app.clock.now() - 1000 });
        app.clock.advance(10);

        const reply = await client(app, token, 'GET', '/v1/badge');
        expect(reply.status).toBe(200);
        const badge = parseJson(reply) as Badge;
        expect(Object.keys(badge).sort()).toEqual(BADGE_FIELDS);
        expect(badge).toMatchObject({
          user: 'u1',
          feed: 1,
          notices: 0,
          conversations: {},
          conversationsTotal: 0,
          reddots: [],
          total: 1,
          display: '1',
          computedAt: app.clock.now(),
        });
        expect(typeof badge.epoch).toBe('string');
        expect(badge.epoch.length).toBeGreaterThan(0);
        expect(Number.isSafeInteger(badge.version)).toBe(true);
        expect(reply.headers.get('x-poll-interval')).toMatch(/^[1-9]\d*$/);
        expect(reply.headers.get('etag')).toBeTruthy();
      });

      it('ETag + If-None-Match answers 304 with no body; a changed badge has a new ETag and version', async () => {
        const token = await tokenFor('u1');
        await followAll('u1', ['a1']);
        const first = await client(app, token, 'GET', '/v1/badge');
        const etag = first.headers.get('etag')!;
        const v1 = (parseJson(first) as Badge).version;
        expect(etag).toMatch(/^"[^"]+"$/);

        const notModified = await client(app, token, 'GET', '/v1/badge', {
          headers: { 'if-none-match': etag },
        });
        expect(notModified.status).toBe(304);
        expect(notModified.text).toBe('');
        expect(notModified.headers.get('etag')).toBe(etag);
        expect(notModified.headers.get('x-poll-interval')).toMatch(/^[1-9]\d*$/);
        // a list of validators, and the weak form, also match
        const listed = await client(app, token, 'GET', '/v1/badge', {
          headers: { 'if-none-match': `"other", W/${etag}` },
        });
        expect(listed.status).toBe(304);
        // an unrelated validator does not
        const other = await client(app, token, 'GET', '/v1/badge', {
          headers: { 'if-none-match': '"nope.1"' },
        });
        expect(other.status).toBe(200);
        expect(other.headers.get('etag')).toBe(etag);

        await ingest({ author: 'a1', id: 'p1', ts: app.clock.now() - 1000 });
        const changed = await client(app, token, 'GET', '/v1/badge', {
          headers: { 'if-none-match': etag },
        });
        expect(changed.status).toBe(200);
        const badge = parseJson(changed) as Badge;
        expect(badge.feed).toBe(1);
        expect(badge.version).toBeGreaterThan(v1);
        const newEtag = changed.headers.get('etag');
        expect(newEtag).toBeTruthy();
        expect(newEtag).not.toBe(etag);

        const again = await client(app, token, 'GET', '/v1/badge', {
          headers: { 'if-none-match': newEtag! },
        });
        expect(again.status).toBe(304);
      });

      it('an unchanged state keeps its version and ETag across polls', async () => {
        const token = await tokenFor('u1');
        const a = await client(app, token, 'GET', '/v1/badge');
        app.clock.advance(1000);
        const b = await client(app, token, 'GET', '/v1/badge');
        expect((parseJson(b) as Badge).version).toBe((parseJson(a) as Badge).version);
        expect(b.headers.get('etag')).toBe(a.headers.get('etag'));
      });

      it('display caps at "99+" by default', async () => {
        const token = await tokenFor('u1');
        await followAll('u1', ['a1']);
        const ts = app.clock.now() - 1000;
        await ingest({
          posts: Array.from({ length: 99 }, (_, i) => ({ author: 'a1', id: `p${i}`, ts })),
        });
        expect(await myBadge(token)).toMatchObject({ feed: 99, total: 99, display: '99' });
        await ingest({ author: 'a1', id: 'p99', ts });
        expect(await myBadge(token)).toMatchObject({ feed: 100, total: 100, display: '99+' });
      });

      it('display follows a configured displayCap', async () => {
        const capped = await apps.start({ rules: { displayCap: 3 } });
        const token = await tokenFor('u1');
        expect((await platform(capped, 'PUT', '/v1/users/u1/follows/a1')).status).toBe(204);
        const ts = capped.clock.now() - 1000;
        await ingest({ posts: [1, 2, 3].map((i) => ({ author: 'a1', id: `p${i}`, ts })) }, capped);
        expect(await myBadge(token, capped)).toMatchObject({ total: 3, display: '3' });
        await ingest({ author: 'a1', id: 'p4', ts }, capped);
        expect(await myBadge(token, capped)).toMatchObject({ total: 4, display: '3+' });
      });

      it('the user comes from the token only: ?user= is ignored, a body `user` is rejected', async () => {
        const token = await tokenFor('u1');
        await followAll('u2', ['a1']);
        await ingest({ author: 'a1', id: 'p1', ts: app.clock.now() - 1000 });

        const viaQuery = await client(app, token, 'GET', '/v1/badge?user=u2');
        expect(viaQuery.status).toBe(200);
        expect(parseJson(viaQuery)).toMatchObject({ user: 'u1', feed: 0 });

        expectError(
          await client(app, token, 'POST', '/v1/badge/read', {
            body: { scope: 'all', user: 'u2' },
          }),
          400,
          'UB_ERR_BAD_REQUEST',
        );
        expectError(
          await client(app, token, 'POST', '/v1/badge/read', {
            body: { scope: 'feed', user: 'u2' },
          }),
          400,
          'UB_ERR_BAD_REQUEST',
        );
        // u2's cursor did not move
        expect((await platformBadge(app, 'u2')).feed).toBe(1);
        expect((await myBadge(await tokenFor('u2'))).feed).toBe(1);
      });
    });

    // ---------------------------------------------------------------- authentication

    describe('client authentication (401 UB_ERR_UNAUTHORIZED)', () => {
      async function expectUnauthorized(headers: Record<string, string>): Promise<void> {
        expectError(await call(app, 'GET', '/v1/badge', { headers }), 401, 'UB_ERR_UNAUTHORIZED');
        expectError(
          await call(app, 'POST', '/v1/badge/read', { headers, body: { scope: 'all' } }),
          401,
          'UB_ERR_UNAUTHORIZED',
        );
      }
      const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

      it('a missing or non-Bearer Authorization header', async () => {
        await expectUnauthorized({});
        await expectUnauthorized({
          authorization: `Basic ${Buffer.from('u1:pw').toString('base64')}`,
        });
        await expectUnauthorized({ authorization: 'Bearer' });
        await expectUnauthorized({ authorization: 'Bearer ' });
        // the platform's key does not stand in for a user token
        await expectUnauthorized({ 'x-api-key': API_KEY });
        await expectUnauthorized({ authorization: `Bearer ${API_KEY}` });
      });

      it('garbage, a wrong secret, or another algorithm', async () => {
        await expectUnauthorized(bearer('garbage'));
        await expectUnauthorized(bearer('a.b.c'));
        await expectUnauthorized(bearer('x'.repeat(5000)));
        const wrong = await new SignJWT({})
          .setProtectedHeader({ alg: 'HS256' })
          .setSubject('u1')
          .setExpirationTime(nowSeconds() + 600)
          .sign(new TextEncoder().encode('another-secret-of-some-length-123'));
        await expectUnauthorized(bearer(wrong));
        const hs512 = await new SignJWT({})
          .setProtectedHeader({ alg: 'HS512' })
          .setSubject('u1')
          .setExpirationTime(nowSeconds() + 600)
          .sign(secretKey);
        await expectUnauthorized(bearer(hs512));
        // a valid token with its payload swapped for another user's
        const good = await tokenFor('u1');
        const [header, , signature] = good.split('.');
        const forged = `${header}.${b64url({ sub: 'admin', exp: nowSeconds() + 600 })}.${signature}`;
        await expectUnauthorized(bearer(forged));
      });

      it('an unsigned alg:none token', async () => {
        const payload = b64url({ sub: 'u1', exp: nowSeconds() + 600 });
        await expectUnauthorized(bearer(`${b64url({ alg: 'none', typ: 'JWT' })}.${payload}.`));
        await expectUnauthorized(bearer(`${b64url({ alg: 'none' })}.${payload}`));
      });

      it('expired beyond the 5 s tolerance is refused, within it accepted', async () => {
        const expiredAt = async (exp: number) =>
          new SignJWT({})
            .setProtectedHeader({ alg: 'HS256' })
            .setSubject('u1')
            .setExpirationTime(exp)
            .sign(secretKey);
        await expectUnauthorized(bearer(await expiredAt(nowSeconds() - 30)));
        await expectUnauthorized(bearer(await expiredAt(nowSeconds() - 7)));
        const lenient = await client(app, await expiredAt(nowSeconds() - 2), 'GET', '/v1/badge');
        expect(lenient.status).toBe(200);
      });

      it('a token not valid yet (nbf in the future)', async () => {
        const early = await new SignJWT({})
          .setProtectedHeader({ alg: 'HS256' })
          .setSubject('u1')
          .setNotBefore(nowSeconds() + 120)
          .setExpirationTime(nowSeconds() + 600)
          .sign(secretKey);
        await expectUnauthorized(bearer(early));
      });

      it('a missing exp, a missing sub, or a sub that is not a valid id', async () => {
        const exp = nowSeconds() + 600;
        const noExp = await new SignJWT({})
          .setProtectedHeader({ alg: 'HS256' })
          .setSubject('u1')
          .sign(secretKey);
        await expectUnauthorized(bearer(noExp));
        const noSub = await new SignJWT({})
          .setProtectedHeader({ alg: 'HS256' })
          .setExpirationTime(exp)
          .sign(secretKey);
        await expectUnauthorized(bearer(noSub));
        for (const sub of ['bad id', 'x'.repeat(65), 'a/b', '']) {
          const token = await new SignJWT({ sub })
            .setProtectedHeader({ alg: 'HS256' })
            .setExpirationTime(exp)
            .sign(secretKey);
          await expectUnauthorized(bearer(token));
        }
        const numeric = await new SignJWT({ sub: 42 } as unknown as Record<string, unknown>)
          .setProtectedHeader({ alg: 'HS256' })
          .setExpirationTime(exp)
          .sign(secretKey);
        await expectUnauthorized(bearer(numeric));
      });

      it('the audience is checked when one is configured', async () => {
        const withAud = await apps.start({ jwtAudience: 'bubble-clients' });
        const check = async (token: string, status: number) => {
          const reply = await client(withAud, token, 'GET', '/v1/badge');
          if (status === 401) expectError(reply, 401, 'UB_ERR_UNAUTHORIZED');
          else expect(reply.status).toBe(status);
        };
        await check(await tokenFor('u1', 600, 'bubble-clients'), 200);
        await check(await tokenFor('u1', 600, 'someone-else'), 401);
        await check(await tokenFor('u1', 600), 401);
        // without an audience configured, any aud is fine
        expect(
          (await client(app, await tokenFor('u1', 600, 'someone-else'), 'GET', '/v1/badge')).status,
        ).toBe(200);
      });
    });

    describe('platform authentication (X-Api-Key)', () => {
      it('GET /v1/users/{u}/badge answers any user badge with the key, 401 otherwise', async () => {
        await followAll('u1', ['a1']);
        await ingest({ author: 'a1', id: 'p1', ts: app.clock.now() - 1000 });
        const reply = await platform(app, 'GET', '/v1/users/u1/badge');
        expect(reply.status).toBe(200);
        const badge = parseJson(reply) as Badge;
        expect(Object.keys(badge).sort()).toEqual(BADGE_FIELDS);
        expect(badge).toMatchObject({ user: 'u1', feed: 1, total: 1, display: '1' });

        const token = await tokenFor('u1');
        const refused: Record<string, string>[] = [
          {},
          { 'x-api-key': '' },
          { 'x-api-key': 'wrong' },
          { 'x-api-key': `${API_KEY}x` },
          { 'x-api-key': API_KEY.slice(0, -1) },
          { authorization: `Bearer ${token}` },
          { authorization: `Bearer ${API_KEY}` },
        ];
        for (const headers of refused) {
          expectError(
            await call(app, 'GET', '/v1/users/u1/badge', { headers }),
            401,
            'UB_ERR_UNAUTHORIZED',
          );
        }
      });

      it('every platform route refuses a call without the key and changes nothing', async () => {
        await followAll('u1', ['a1']);
        const token = await tokenFor('u1');
        const ts = app.clock.now() - 1000;
        const calls: [string, string, unknown?][] = [
          ['PUT', '/v1/users/u1/follows/a2'],
          ['DELETE', '/v1/users/u1/follows/a1'],
          ['PUT', '/v1/users/u1/follows', { authors: ['a3'] }],
          ['GET', '/v1/users/u1/follows'],
          ['POST', '/v1/posts', { author: 'a1', id: 'p1', ts }],
          ['DELETE', '/v1/posts/a1/p1'],
          ['GET', '/v1/users/u1/badge'],
        ];
        for (const [method, path, body] of calls) {
          const refused: Record<string, string>[] = [
            { 'x-api-key': 'nope' },
            { authorization: `Bearer ${token}` },
          ];
          for (const headers of refused) {
            expectError(
              await call(app, method, path, { headers, body }),
              401,
              'UB_ERR_UNAUTHORIZED',
            );
          }
        }
        expect(await follows(app, 'u1')).toEqual(['a1']);
        expect((await myBadge(token)).feed).toBe(0);
      });
    });

    // ---------------------------------------------------------------- reads

    describe('POST /v1/badge/read', () => {
      it('scope feed without upTo reads up to now and answers 200 with the new badge', async () => {
        const token = await tokenFor('u1');
        await followAll('u1', ['a1']);
        const now = app.clock.now();
        await ingest({
          posts: [1, 2, 3].map((i) => ({ author: 'a1', id: `p${i}`, ts: now - i * 1000 })),
        });
        const before = await myBadge(token);
        expect(before.feed).toBe(3);

        const reply = await client(app, token, 'POST', '/v1/badge/read', {
          body: { scope: 'feed' },
        });
        expect(reply.status).toBe(200);
        const badge = parseJson(reply) as Badge;
        expect(Object.keys(badge).sort()).toEqual(BADGE_FIELDS);
        expect(badge).toMatchObject({ user: 'u1', feed: 0, total: 0, display: '0' });
        expect(badge.version).toBeGreaterThan(before.version);
        // what GET serves next is that same state
        const next = await client(app, token, 'GET', '/v1/badge');
        expect(parseJson(next)).toMatchObject({
          feed: 0,
          version: badge.version,
          epoch: badge.epoch,
        });
        expect(next.headers.get('etag')).toBe(reply.headers.get('etag'));

        app.clock.advance(1000);
        await ingest({ author: 'a1', id: 'p4', ts: app.clock.now() });
        expect((await myBadge(token)).feed).toBe(1);
      });

      it('scope feed with upTo reads up to it; the cursor never moves back', async () => {
        const token = await tokenFor('u1');
        await followAll('u1', ['a1']);
        const now = app.clock.now();
        await ingest({
          posts: [1, 2, 3].map((i) => ({ author: 'a1', id: `p${i}`, ts: now - i * 1000 })),
        });
        const read = (upTo: number) =>
          client(app, token, 'POST', '/v1/badge/read', { body: { scope: 'feed', upTo } });

        const reply = await read(now - 2000);
        expect(reply.status).toBe(200);
        expect((parseJson(reply) as Badge).feed).toBe(1);
        const back = await read(now - 3000);
        expect(back.status).toBe(200);
        expect((parseJson(back) as Badge).feed).toBe(1);
      });

      it('an upTo in the future is clamped to now', async () => {
        const token = await tokenFor('u1');
        await followAll('u1', ['a1']);
        const now = app.clock.now();
        await ingest({ author: 'a1', id: 'p1', ts: now - 1000 });
        const reply = await client(app, token, 'POST', '/v1/badge/read', {
          body: { scope: 'feed', upTo: now + 3_600_000 },
        });
        expect(reply.status).toBe(200);
        expect((parseJson(reply) as Badge).feed).toBe(0);
        // a post made after the read counts: the cursor stopped at the read's now
        app.clock.advance(10_000);
        await ingest({ author: 'a1', id: 'p2', ts: app.clock.now() });
        expect((await myBadge(token)).feed).toBe(1);
      });

      it('scope all reads the feed', async () => {
        const token = await tokenFor('u1');
        await followAll('u1', ['a1', 'a2']);
        const now = app.clock.now();
        await ingest({
          posts: [
            { author: 'a1', id: 'p1', ts: now - 1 },
            { author: 'a2', id: 'p1', ts: now },
          ],
        });
        expect((await myBadge(token)).feed).toBe(2);
        const reply = await client(app, token, 'POST', '/v1/badge/read', {
          body: { scope: 'all' },
        });
        expect(reply.status).toBe(200);
        expect(parseJson(reply)).toMatchObject({
          user: 'u1',
          feed: 0,
          notices: 0,
          total: 0,
          display: '0',
        });
      });

      it('a bad body is 400 UB_ERR_BAD_REQUEST and reads nothing', async () => {
        const token = await tokenFor('u1');
        await followAll('u1', ['a1']);
        await ingest({ author: 'a1', id: 'p1', ts: app.clock.now() - 1000 });
        const send = (options: { body?: unknown; rawBody?: string }) =>
          client(app, token, 'POST', '/v1/badge/read', options);

        for (const body of [
          { scope: 'everything' },
          { scope: 'FEED' },
          {},
          [],
          'feed',
          null,
          42,
          { scope: 'feed', upTo: -1 },
          { scope: 'feed', upTo: 1.5 },
          { scope: 'feed', upTo: '123' },
          { scope: 'all', upTo: 123 },
        ]) {
          expectError(await send({ body }), 400, 'UB_ERR_BAD_REQUEST');
        }
        expectError(await send({ rawBody: '{"scope":"feed"' }), 400, 'UB_ERR_BAD_REQUEST');
        expectError(await send({ rawBody: "{'scope':'feed'}" }), 400, 'UB_ERR_BAD_REQUEST');
        expectError(await send({ rawBody: '' }), 400, 'UB_ERR_BAD_REQUEST');
        expectError(await send({ rawBody: '   \n' }), 400, 'UB_ERR_BAD_REQUEST');
        expectError(await send({}), 400, 'UB_ERR_BAD_REQUEST');

        expect((await myBadge(token)).feed).toBe(1);
      });
    });

    // ---------------------------------------------------------------- bodies

    describe('request bodies', () => {
      it('a body of exactly 1 MiB is read', async () => {
        await followAll('u1', ['old']);
        const json = '{"authors":["a1"]}';
        const reply = await platform(app, 'PUT', '/v1/users/u1/follows', {
          rawBody: json.padEnd(MIB, ' '),
        });
        expect(reply.status).toBe(204);
        expect(await follows(app, 'u1')).toEqual(['a1']);
      });

      it('a declared Content-Length over 1 MiB is 413 UB_ERR_TOO_LARGE before the body is sent', async () => {
        await followAll('u1', ['keep']);
        for (const declared of [MIB + 1, 50 * MIB]) {
          const conn = await RawConnection.open(app.port);
          await conn.write(
            `PUT /v1/users/u1/follows HTTP/1.1\r\nHost: test\r\nX-Api-Key: ${API_KEY}\r\n` +
              `Content-Type: application/json\r\nContent-Length: ${declared}\r\n\r\n{"authors":["a1"`,
          );
          // only 17 body bytes were sent: the answer cannot have waited for the rest
          const response = await conn.response();
          expectError(response, 413, 'UB_ERR_TOO_LARGE');
          conn.destroy();
        }
        expect(await follows(app, 'u1')).toEqual(['keep']);
      });

      it('a chunked body that grows past 1 MiB is 413 UB_ERR_TOO_LARGE while it is still being sent', async () => {
        await followAll('u1', ['keep']);
        const conn = await RawConnection.open(app.port);
        await conn.write(
          `PUT /v1/users/u1/follows HTTP/1.1\r\nHost: test\r\nX-Api-Key: ${API_KEY}\r\n` +
            'Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n',
        );
        const piece = Buffer.from('{"authors":[' + '"a1",'.repeat(13_104)); // 64 KiB
        const chunk = Buffer.concat([
          Buffer.from(`${piece.length.toString(16)}\r\n`),
          piece,
          Buffer.from('\r\n'),
        ]);
        // never sends the final 0-chunk: the body never ends, so an answer must come mid-stream
        const limit = 64 * MIB;
        while (!conn.peek() && !conn.closed && conn.bytesWritten < limit) await conn.write(chunk);
        const response = await conn.response();
        expectError(response, 413, 'UB_ERR_TOO_LARGE');
        expect(conn.bytesWritten).toBeLessThan(limit);
        conn.destroy();
        expect(await follows(app, 'u1')).toEqual(['keep']);
      });

      it('a fetch client sending more than 1 MiB gets the 413', async () => {
        await followAll('u1', ['keep']);
        const json = '{"authors":["a1"]}';
        const reply = await platform(app, 'PUT', '/v1/users/u1/follows', {
          rawBody: json.padEnd(MIB + 1, ' '),
        });
        expectError(reply, 413, 'UB_ERR_TOO_LARGE');
        expect(await follows(app, 'u1')).toEqual(['keep']);
      });

      it('a request Node cannot parse still gets a JSON error body', async () => {
        const cases: [string, number, string][] = [
          [
            'GET /healthz HTTP/1.1\r\nHost: test\r\nNo colon here\r\n\r\n',
            400,
            'UB_ERR_BAD_REQUEST',
          ],
          ['NOT-HTTP\r\n\r\n', 400, 'UB_ERR_BAD_REQUEST'],
          [
            `POST /v1/posts HTTP/1.1\r\nHost: test\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n`,
            400,
            'UB_ERR_BAD_REQUEST',
          ],
          [
            `GET /healthz HTTP/1.1\r\nHost: test\r\nX-Filler: ${'f'.repeat(20_000)}\r\n\r\n`,
            413,
            'UB_ERR_TOO_LARGE',
          ],
        ];
        for (const [request, status, code] of cases) {
          const conn = await RawConnection.open(app.port);
          await conn.write(request);
          expectError(await conn.response(), status, code);
          conn.destroy();
        }
      });

      it('a request without Content-Length or chunking has an empty body: 400', async () => {
        await followAll('u1', ['keep']);
        const conn = await RawConnection.open(app.port);
        await conn.write(
          `PUT /v1/users/u1/follows HTTP/1.1\r\nHost: test\r\nX-Api-Key: ${API_KEY}\r\nConnection: close\r\n\r\n`,
        );
        expectError(await conn.response(), 400, 'UB_ERR_BAD_REQUEST');
        conn.destroy();
        expect(await follows(app, 'u1')).toEqual(['keep']);
      });
    });

    // ---------------------------------------------------------------- routing

    describe('routing', () => {
      it('an unknown route is 404 UB_ERR_NOT_FOUND, with or without credentials', async () => {
        const token = await tokenFor('u1');
        for (const path of [
          '/',
          '/v1',
          '/v2/badge',
          '/v1/badge/',
          '/v1/users/u1/follows/a1/extra',
          '/v1/users//follows',
        ]) {
          expectError(await call(app, 'GET', path), 404, 'UB_ERR_NOT_FOUND');
          expectError(await platform(app, 'GET', path), 404, 'UB_ERR_NOT_FOUND');
          expectError(await client(app, token, 'GET', path), 404, 'UB_ERR_NOT_FOUND');
        }
        expectError(
          await platform(app, 'POST', '/v1/nothing', { body: {} }),
          404,
          'UB_ERR_NOT_FOUND',
        );
      });

      it('a wrong method on a known path is 405 with an Allow header', async () => {
        const cases: [string, string, string[]][] = [
          ['POST', '/v1/badge', ['GET']],
          ['DELETE', '/v1/badge', ['GET']],
          ['GET', '/v1/badge/read', ['POST']],
          ['POST', '/v1/users/u1/follows/a1', ['PUT', 'DELETE']],
          ['PATCH', '/v1/users/u1/follows', ['PUT', 'GET']],
          ['GET', '/v1/posts', ['POST']],
          ['GET', '/v1/posts/a1/p1', ['DELETE']],
          ['POST', '/healthz', ['GET']],
          ['PUT', '/metrics', ['GET']],
        ];
        for (const [method, path, allow] of cases) {
          const reply = await platform(app, method, path);
          expectError(reply, 405, 'UB_ERR_METHOD_NOT_ALLOWED');
          const allowed = (reply.headers.get('allow') ?? '').split(',').map((m) => m.trim());
          expect(allowed.sort(), `${method} ${path}`).toEqual([...allow].sort());
        }
      });

      it('credentials in a query string are 401, whatever else the request carries', async () => {
        const token = await tokenFor('u1');
        await followAll('u1', ['keep']);
        for (const query of [
          `token=${token}`,
          `access_token=${token}`,
          `api_key=${API_KEY}`,
          `apiKey=${API_KEY}`,
          'jwt=x',
          'key=x',
        ]) {
          expectError(await call(app, 'GET', `/v1/badge?${query}`), 401, 'UB_ERR_UNAUTHORIZED');
          expectError(
            await client(app, token, 'GET', `/v1/badge?${query}`),
            401,
            'UB_ERR_UNAUTHORIZED',
          );
          expectError(
            await call(app, 'GET', `/v1/users/u1/badge?${query}`),
            401,
            'UB_ERR_UNAUTHORIZED',
          );
          expectError(
            await platform(app, 'PUT', `/v1/users/u1/follows?${query}`, { body: { authors: [] } }),
            401,
            'UB_ERR_UNAUTHORIZED',
          );
        }
        expect(await follows(app, 'u1')).toEqual(['keep']);
      });
    });

    // ---------------------------------------------------------------- operator

    describe('operator endpoints', () => {
      it('/healthz and /readyz answer 200 without credentials', async () => {
        const health = await call(app, 'GET', '/healthz');
        expect(health.status).toBe(200);
        const ready = await call(app, 'GET', '/readyz');
        expect(ready.status).toBe(200);
      });

      it('/metrics is Prometheus text counting requests', async () => {
        await call(app, 'GET', '/v1/badge');
        await call(app, 'GET', '/healthz');
        const reply = await call(app, 'GET', '/metrics');
        expect(reply.status).toBe(200);
        expect(reply.headers.get('content-type')).toMatch(/^text\/plain/);
        expect(reply.text).toContain('# TYPE bubble_http_requests_total counter');
        expect(reply.text).toMatch(
          /^bubble_http_requests_total\{[^}]*route="\/v1\/badge"[^}]*status="401"[^}]*\} 1$/m,
        );
        expect(reply.text).toMatch(
          /^bubble_http_requests_total\{[^}]*route="\/healthz"[^}]*status="200"[^}]*\} 1$/m,
        );
      });

      it('/readyz is 503 UB_ERR_UNAVAILABLE with Retry-After once the gateway is closing', async () => {
        const closing = await apps.start({ gateway: { drainTimeoutMs: 5000 } });
        // A request in flight (its body half sent) keeps its connection open across close();
        // a /readyz pipelined behind it is answered while the gateway drains.
        const body = JSON.stringify({ author: 'a1', id: 'p1', ts: closing.clock.now() });
        const conn = await RawConnection.open(closing.port);
        await conn.write(
          `POST /v1/posts HTTP/1.1\r\nHost: test\r\nX-Api-Key: ${API_KEY}\r\n` +
            `Content-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`,
        );
        await waitFor(() => closing.gateway.load.inFlight === 1, {
          message: 'the POST never started',
        });
        const closed = closing.gateway.close();
        await conn.write(
          `${body.slice(5)}GET /readyz HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n`,
        );
        const responses = await waitFor(() => (conn.all().length >= 2 ? conn.all() : undefined), {
          message: 'expected a response to the POST and one to the pipelined /readyz',
        });
        const [posted, ready] = responses!;
        expect(posted!.status).toBe(202);
        expectError(ready!, 503, 'UB_ERR_UNAVAILABLE');
        expect(ready!.headers['retry-after']).toMatch(/^\d+$/);
        conn.destroy();
        await closed;
      });

      if (engine === 'redis') {
        it('/readyz is 503 with Retry-After, and a badge 503, once Redis is gone', async () => {
          const own = await startRedisServer();
          try {
            const store = new RedisStore({
              url: own.url,
              keyPrefix: uniquePrefix('down'),
              pools: 100,
            });
            // the store's client has no 'error' listener; keep the expected ones out of the log
            store.redis.on('error', () => {});
            const down = await apps.start({}, store);
            const token = await tokenFor('u1');
            expect((await call(down, 'GET', '/readyz')).status).toBe(200);
            expect((await client(down, token, 'GET', '/v1/badge')).status).toBe(200);

            await own.stop();
            const response = await waitFor(
              async () => {
                const reply = await call(down, 'GET', '/readyz');
                return reply.status === 503 ? reply : undefined;
              },
              { timeoutMs: 15_000, message: '/readyz never reported Redis gone' },
            );
            expectError(response!, 503, 'UB_ERR_UNAVAILABLE');
            expect(response!.headers.get('retry-after')).toMatch(/^\d+$/);
            // liveness touches no dependency
            expect((await call(down, 'GET', '/healthz')).status).toBe(200);
            const badge = await client(down, token, 'GET', '/v1/badge');
            expectError(badge, 503, 'UB_ERR_UNAVAILABLE');
            expect(badge.headers.get('retry-after')).toMatch(/^\d+$/);
          } finally {
            await own.stop();
          }
        });
      }
    });
  });
}
