/**
 * GET /v1/conversations's ETag (shared spec api.md "Client API"): If-None-Match with the current
 * one answers 304 with no body; a message, a read, a mute, a join and a leave each change it, and
 * so does another limit. One in-process gateway per test, memory engine and a real redis-server.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { client, platform, tokenFor, useApps, type App, type Reply } from './support.js';

for (const engine of ['memory', 'redis'] as const) {
  describe(`conversation list ETag [${engine}]`, () => {
    const apps = useApps(engine, 'list-etag');
    let app: App;
    let token: string;

    beforeEach(async () => {
      app = await apps.start();
      token = await tokenFor('u1');
    });

    async function ok(reply: Promise<Reply>, status: number): Promise<Reply> {
      const done = await reply;
      expect(done.status, done.text).toBe(status);
      return done;
    }

    const list = (query = '', etag?: string) =>
      client(app, token, 'GET', `/v1/conversations${query}`, {
        headers: etag === undefined ? {} : { 'if-none-match': etag },
      });

    /** The current ETag; asserts a 304 for it, and that it differs from `before`. */
    async function etagAfter(before: string | undefined, what: string): Promise<string> {
      const reply = await ok(list(), 200);
      const etag = reply.headers.get('etag');
      expect(etag, what).toMatch(/^"[^"]+"$/);
      if (before !== undefined) expect(etag, what).not.toBe(before);
      const again = await ok(list('', etag!), 304);
      expect(again.text, what).toBe('');
      expect(again.headers.get('etag')).toBe(etag);
      return etag!;
    }

    it('304 for the current ETag; every change of the list changes it', async () => {
      let etag = await etagAfter(undefined, 'empty list');
      await ok(
        platform(app, 'PUT', '/v1/conversations/c1/members', { body: { members: ['u1', 'u2'] } }),
        204,
      );
      etag = await etagAfter(etag, 'join');
      await ok(
        platform(app, 'POST', '/v1/conversations/c1/messages', {
          body: { seq: 1, from: 'u2', preview: { t: 'hi' } },
        }),
        202,
      );
      etag = await etagAfter(etag, 'message');
      // A stale ETag gets the whole list.
      const stale = await ok(list('', '"stale"'), 200);
      expect((JSON.parse(stale.text) as unknown[]).length).toBe(1);
      await ok(
        client(app, token, 'POST', '/v1/badge/read', { body: { scope: 'conversation', id: 'c1' } }),
        200,
      );
      etag = await etagAfter(etag, 'read');
      await ok(
        client(app, token, 'PUT', '/v1/conversations/c1/mute', { body: { muted: true } }),
        204,
      );
      etag = await etagAfter(etag, 'mute');
      await ok(
        platform(app, 'PUT', '/v1/conversations/c2/members', { body: { members: ['u1'] } }),
        204,
      );
      etag = await etagAfter(etag, 'second join');
      const limited = await ok(list('?limit=1'), 200);
      expect(limited.headers.get('etag')).not.toBe(etag);
      await ok(list('?limit=1', limited.headers.get('etag')!), 304);
      await ok(platform(app, 'DELETE', '/v1/conversations/c1/members/u1'), 204);
      etag = await etagAfter(etag, 'leave');
      // Unchanged by what does not touch the caller's list.
      await ok(
        platform(app, 'PUT', '/v1/conversations/c9/members', { body: { members: ['u2'] } }),
        204,
      );
      await ok(list('', etag), 304);
    });
  });
}
