/**
 * The HTTP contract (shared spec api.md, docs/semantics.md "Feed bubble") driven over real HTTP
 * against an in-process gateway, once per storage engine: follows and posts.
 */
import { DAY_MS } from '@bubble/protocol';
import { describe, expect, it } from 'vitest';
import {
  client,
  expectError,
  follows,
  parseJson,
  platform,
  tokenFor,
  app,
  describeOnEachEngine,
  type Badge,
} from './support.js';
import { routeCalls } from './gateway-routes-support.js';

describeOnEachEngine('HTTP gateway routes', 'http', () => {
  const { followAll, ingest, myBadge } = routeCalls(() => app);

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
      expectError(await platform(app, 'PUT', '/v1/users/u1/follows/u1'), 422, 'UB_ERR_SELF_FOLLOW');
      expect(await follows(app, 'u1')).toEqual([]);
    });

    it('the follow cap (5 here) refuses the 6th author with 409 UB_ERR_FOLLOW_CAP', async () => {
      await followAll('u1', ['a1', 'a2', 'a3', 'a4', 'a5']);
      expectError(await platform(app, 'PUT', '/v1/users/u1/follows/a6'), 409, 'UB_ERR_FOLLOW_CAP');
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
      expectError(await platform(app, 'PUT', `/v1/users/${bad}/follows/a2`), 400, 'UB_ERR_BAD_ID');
      expectError(await platform(app, 'PUT', `/v1/users/u1/follows/${bad}`), 400, 'UB_ERR_BAD_ID');
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
      expectError(await post({ author: 'a1', id: 'p1', ts: ts + 0.5 }), 400, 'UB_ERR_BAD_REQUEST');
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
});
