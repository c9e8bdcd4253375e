/**
 * The HTTP contract (shared spec api.md, docs/semantics.md "Feed bubble") driven over real HTTP
 * against an in-process gateway, once per storage engine: reads, request bodies, routing and the operator endpoints.
 */
import { RedisStore } from '@bubble/store';
import { startRedisServer, uniquePrefix, waitFor } from '@bubble/test-utils';
import { describe, expect, it } from 'vitest';
import {
  API_KEY,
  MIB,
  RawConnection,
  client,
  call,
  expectError,
  follows,
  parseJson,
  platform,
  tokenFor,
  app,
  describeOnEachEngine,
  type Badge,
} from './support.js';
import { BADGE_FIELDS, routeCalls } from './gateway-routes-support.js';

describeOnEachEngine('HTTP gateway routes', 'http', (apps, engine) => {
  const { followAll, ingest, myBadge } = routeCalls(() => app);

  // ---------------------------------------------------------------- reads

  describe('POST /v1/badge/read', () => {
    /** u1 follows a1, who posted 1, 2 and 3 s before now: u1's token, and that now. */
    async function followingThreePosts(): Promise<{ token: string; now: number }> {
      const token = await tokenFor('u1');
      await followAll('u1', ['a1']);
      const now = app.clock.now();
      await ingest({
        posts: [1, 2, 3].map((i) => ({ author: 'a1', id: `p${i}`, ts: now - i * 1000 })),
      });
      return { token, now };
    }

    it('scope feed without upTo reads up to now and answers 200 with the new badge', async () => {
      const { token } = await followingThreePosts();
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
      const { token, now } = await followingThreePosts();
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
        ['GET /healthz HTTP/1.1\r\nHost: test\r\nNo colon here\r\n\r\n', 400, 'UB_ERR_BAD_REQUEST'],
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

    it('a body nested deeper than 32 levels is 400 UB_ERR_BAD_REQUEST', async () => {
      // A message preview 100k arrays deep: it parses, but the preview's size check (a
      // JSON.stringify) overflowed the stack and the route answered 500.
      const deep = '['.repeat(100_000) + ']'.repeat(100_000);
      const reply = await platform(app, 'POST', '/v1/conversations/deep/messages', {
        rawBody: `{"seq":1,"from":"u9","preview":{"x":${deep}}}`,
        headers: { 'content-type': 'application/json' },
      });
      expectError(reply, 400, 'UB_ERR_BAD_REQUEST');
      expect(reply.text).toMatch(/deeper than 32 levels/);
      // 32 levels is a body like any other: past the body's checks (404: no such conversation).
      const nested = '{"a":'.repeat(29) + '1' + '}'.repeat(29);
      const fine = await platform(app, 'POST', '/v1/conversations/deep/messages', {
        rawBody: `{"seq":1,"from":"u9","preview":${nested}}`,
        headers: { 'content-type': 'application/json' },
      });
      expectError(fine, 404, 'UB_ERR_NOT_FOUND');
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
