/**
 * The HTTP contract (shared spec api.md, docs/semantics.md "Feed bubble") driven over real HTTP
 * against an in-process gateway, once per storage engine: the client badge and authentication.
 */
import { SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import {
  API_KEY,
  client,
  call,
  expectError,
  follows,
  parseJson,
  platform,
  platformBadge,
  tokenFor,
  app,
  describeOnEachEngine,
  type Badge,
} from './support.js';
import {
  BADGE_FIELDS,
  b64url,
  nowSeconds,
  routeCalls,
  secretKey,
} from './gateway-routes-support.js';

describeOnEachEngine('HTTP gateway routes', 'http', (apps) => {
  const { followAll, ingest, myBadge } = routeCalls(() => app);

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
          expectError(await call(app, method, path, { headers, body }), 401, 'UB_ERR_UNAUTHORIZED');
        }
      }
      expect(await follows(app, 'u1')).toEqual(['a1']);
      expect((await myBadge(token)).feed).toBe(0);
    });
  });
});
