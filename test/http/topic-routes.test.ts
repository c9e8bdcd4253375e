/**
 * The topic routes of api.md over real HTTP, once per storage engine: follow, unfollow,
 * replace, list, posts carrying topics, and bad input (which changes nothing).
 */
import { MINUTE_MS } from '@bubble/protocol';
import { describe, expect, it } from 'vitest';
import { expectError, parseJson, platform, platformBadge, app, useFreshApp } from './support.js';

for (const engine of ['memory', 'redis'] as const) {
  describe(`HTTP topic routes [${engine}]`, () => {
    useFreshApp(engine, 'topics', { rules: { topicCap: 3 } });

    async function topics(user: string): Promise<string[]> {
      const reply = await platform(app, 'GET', `/v1/users/${user}/topics`);
      expect(reply.status, reply.text).toBe(200);
      return (parseJson(reply) as { topics: string[] }).topics;
    }

    it('PUT/DELETE one topic, PUT the set, GET it sorted', async () => {
      expect((await platform(app, 'PUT', '/v1/users/u1/topics/dogs')).status).toBe(204);
      expect((await platform(app, 'PUT', '/v1/users/u1/topics/cats')).status).toBe(204);
      expect((await platform(app, 'PUT', '/v1/users/u1/topics/cats')).status).toBe(204);
      expect(await topics('u1')).toEqual(['cats', 'dogs']);
      expect((await platform(app, 'DELETE', '/v1/users/u1/topics/dogs')).status).toBe(204);
      expect((await platform(app, 'DELETE', '/v1/users/u1/topics/never')).status).toBe(204);
      expect(await topics('u1')).toEqual(['cats']);
      const replaced = await platform(app, 'PUT', '/v1/users/u1/topics', {
        body: { topics: ['x', 'y', 'x'] },
      });
      expect(replaced.status, replaced.text).toBe(204);
      expect(await topics('u1')).toEqual(['x', 'y']);
      expect(await topics('nobody')).toEqual([]);
    });

    it('the cap is 409 UB_ERR_FOLLOW_CAP, one more or a larger replace, and changes nothing', async () => {
      for (const t of ['a', 'b', 'c']) {
        expect((await platform(app, 'PUT', `/v1/users/u1/topics/${t}`)).status).toBe(204);
      }
      expectError(await platform(app, 'PUT', '/v1/users/u1/topics/d'), 409, 'UB_ERR_FOLLOW_CAP');
      expectError(
        await platform(app, 'PUT', '/v1/users/u1/topics', {
          body: { topics: ['p', 'q', 'r', 's'] },
        }),
        409,
        'UB_ERR_FOLLOW_CAP',
      );
      expect(await topics('u1')).toEqual(['a', 'b', 'c']);
    });

    it('bad ids are 400 UB_ERR_BAD_ID; a bad body 400; following a topic named like yourself is fine', async () => {
      expectError(await platform(app, 'PUT', '/v1/users/u1/topics/a%20b'), 400, 'UB_ERR_BAD_ID');
      expectError(await platform(app, 'PUT', '/v1/users/u%20x/topics/a'), 400, 'UB_ERR_BAD_ID');
      expectError(
        await platform(app, 'PUT', '/v1/users/u1/topics', { body: { topics: ['ok', 'no way'] } }),
        400,
        'UB_ERR_BAD_ID',
      );
      expectError(
        await platform(app, 'PUT', '/v1/users/u1/topics', { body: { authors: ['a'] } }),
        400,
        'UB_ERR_BAD_REQUEST',
      );
      expect(await topics('u1')).toEqual([]);
      // Self-follow (422) is for authors only.
      expect((await platform(app, 'PUT', '/v1/users/u1/topics/u1')).status).toBe(204);
      expectError(await platform(app, 'PUT', '/v1/users/u1/follows/u1'), 422, 'UB_ERR_SELF_FOLLOW');
    });

    it('posts carry ≤ 10 topics; 11, a bad topic or a non-array refuses the batch whole', async () => {
      const ts = app.clock.now() - MINUTE_MS;
      const eleven = Array.from({ length: 11 }, (_, i) => `t${i}`);
      for (const body of [
        { author: 'bob', id: 'p1', ts, topics: eleven },
        {
          posts: [
            { author: 'bob', id: 'p1', ts, topics: ['ok'] },
            { author: 'bob', id: 'p2', ts, topics: 'ok' },
          ],
        },
      ]) {
        expectError(await platform(app, 'POST', '/v1/posts', { body }), 400, 'UB_ERR_BAD_REQUEST');
      }
      expectError(
        await platform(app, 'POST', '/v1/posts', {
          body: { author: 'bob', id: 'p1', ts, topics: ['bad topic'] },
        }),
        400,
        'UB_ERR_BAD_ID',
      );
      expect((await platform(app, 'PUT', '/v1/users/u1/topics/ok')).status).toBe(204);
      expect((await platformBadge(app, 'u1')).feed).toBe(0);
      const ten = Array.from({ length: 10 }, (_, i) => `t${i}`);
      const reply = await platform(app, 'POST', '/v1/posts', {
        body: { posts: [{ author: 'bob', id: 'p1', ts, topics: ['ok', ...ten.slice(1)] }] },
      });
      expect(reply.status, reply.text).toBe(202);
      expect(parseJson(reply)).toEqual({ accepted: 1, ignored: 0 });
      expect((await platformBadge(app, 'u1')).feed).toBe(1);
      // Also following the author, and a second topic of the post: still one.
      expect((await platform(app, 'PUT', '/v1/users/u1/follows/bob')).status).toBe(204);
      expect((await platform(app, 'PUT', '/v1/users/u1/topics/t3')).status).toBe(204);
      expect((await platformBadge(app, 'u1')).feed).toBe(1);
      const explained = await platform(app, 'GET', '/v1/users/u1/badge/explain');
      expect((parseJson(explained) as { feed: unknown }).feed).toMatchObject({
        topics: ['ok', 't3'],
        byAuthors: 1,
        byTopicsOnly: 0,
      });
      expect((await platform(app, 'DELETE', '/v1/posts/bob/p1')).status).toBe(204);
      expect((await platformBadge(app, 'u1')).feed).toBe(0);
    });
  });
}
