/**
 * Every HTTP route fuzzed with fast-check (issue 19, "HTTP fuzzing"): arbitrary JSON (deep
 * nesting, huge numbers, `__proto__` keys, long strings, wrong types), truncated and oversized
 * bodies, arbitrary methods, headers, queries and path parameters, with every credential kind.
 * Every answer is a status of the contract, every error the documented shape with a code of the
 * closed list; no answer is a 500; the process never crashes (vitest fails the file on an
 * unhandled rejection); `Object.prototype` is never touched; and a refused request writes
 * nothing (on Redis: every key's DUMP compared before and after it).
 */
import { request } from 'node:http';
import { ERROR_CODES } from '@bubble/protocol';
import { RedisStore, type BubbleStore } from '@bubble/store';
import { MemoryStore } from '@bubble/store';
import { startRedisServer, type RedisServerHandle } from '@bubble/test-utils';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_KEY, startApp, tokenFor, type App } from './support.js';

const STATUSES = new Set([200, 202, 204, 304, 400, 401, 403, 404, 405, 409, 413, 422, 429, 503]);
const CODES = new Set<string>(ERROR_CODES);
const JS_NAMES = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf'];

interface RawReply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/** One request as bytes go: any method, path, headers and body, no client-side checks. */
function send(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: Buffer,
): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          text: Buffer.concat(chunks).toString('utf8'),
        }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

const param = fc.oneof(
  fc.constantFrom('alice', 'bob', 'c1', 'x.y:z@w-1', ...JS_NAMES),
  fc.constantFrom(
    'a'.repeat(65),
    '%zz',
    '%2F..%2F',
    'a%00b',
    '..',
    '%20',
    '%C3%A9',
    '%F0%9F%98%80',
  ),
  fc.string({ maxLength: 80 }).map(encodeURIComponent),
);

/** JSON values a schema must refuse or accept without ever crashing. */
const hostileJson: fc.Arbitrary<string> = fc.oneof(
  fc.jsonValue({ maxDepth: 4 }).map((value) => JSON.stringify(value)),
  fc
    .dictionary(
      fc.constantFrom(...JS_NAMES, 'id', 'user', 'author', 'ts', 'posts', 'scope'),
      fc.jsonValue({ maxDepth: 2 }),
    )
    .map((value) => JSON.stringify(value)),
  fc.constantFrom(
    '{"__proto__":{"polluted":true}}',
    '{"constructor":{"prototype":{"polluted":true}}}',
    '{"author":"a","id":"p","ts":1e400}',
    '{"author":"a","id":"p","ts":123456789012345678901234567890}',
    '{"author":"a","id":"p","ts":-1}',
    '{"posts":[{"author":"a","id":"p","ts":"now"}]}',
    '{"scope":"all","__proto__":{"scope":"feed"}}',
    '{"members":["a",null,{"__proto__":1}]}',
    '{"muted":"yes"}',
    '[]',
    'null',
    '""',
    `${'['.repeat(20_000)}${']'.repeat(20_000)}`,
    `{"id":"${'x'.repeat(200_000)}"}`,
  ),
  // Truncated: a valid body cut anywhere.
  fc.tuple(fc.jsonValue({ maxDepth: 3 }), fc.nat()).map(([value, cut]) => {
    const text = JSON.stringify(value) ?? 'null';
    return text.slice(0, cut % Math.max(1, text.length));
  }),
);

type Credential = 'platform' | 'user' | 'none' | 'bad';

interface FuzzRequest {
  routeIndex: number;
  method: string | null;
  params: string[];
  query: string;
  credential: Credential;
  headers: Array<[string, string]>;
  body: string | null;
  contentType: string;
}

const fuzzRequest = (routeCount: number): fc.Arbitrary<FuzzRequest> =>
  fc.record({
    routeIndex: fc.nat({ max: routeCount - 1 }),
    method: fc.oneof(
      { weight: 4, arbitrary: fc.constant(null) },
      {
        weight: 1,
        arbitrary: fc.constantFrom('GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'),
      },
    ),
    params: fc.array(param, { minLength: 4, maxLength: 4 }),
    query: fc.oneof(
      fc.constant(''),
      fc.constantFrom('?limit=-1', '?limit=abc', '?limit=1e9', '?limit=5&limit=6', '?__proto__=1'),
      fc.string({ maxLength: 40 }).map((text) => `?${encodeURIComponent(text)}=1`),
    ),
    credential: fc.oneof(
      { weight: 3, arbitrary: fc.constantFrom<Credential>('platform', 'user') },
      { weight: 1, arbitrary: fc.constantFrom<Credential>('none', 'bad') },
    ),
    headers: fc.array(
      fc.tuple(
        fc.constantFrom(
          'x-forwarded-for',
          'if-none-match',
          'accept',
          'x-custom',
          'origin',
          'content-encoding',
        ),
        fc.string({ maxLength: 60 }).filter((value) => /^[\x20-\x7e]*$/.test(value)),
      ),
      { maxLength: 3 },
    ),
    body: fc.option(hostileJson, { freq: 4 }),
    contentType: fc.constantFrom(
      'application/json',
      'text/plain',
      'application/json; charset=utf-8',
    ),
  });

function pathOf(pattern: string, params: readonly string[]): string {
  let next = 0;
  return pattern.replace(/:[a-zA-Z]+/g, () => params[next++ % params.length]!);
}

async function dumpAll(redis: Redis): Promise<Map<string, string>> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'COUNT', 1000);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== '0');
  const dumped = new Map<string, string>();
  for (const key of keys.sort()) {
    const value = await redis.dumpBuffer(key);
    if (value) dumped.set(key, value.toString('base64'));
  }
  return dumped;
}

function expectContractAnswer(reply: RawReply, what: string): void {
  expect(STATUSES.has(reply.status), `${what} → ${reply.status} ${reply.text.slice(0, 300)}`).toBe(
    true,
  );
  if (reply.status >= 400) {
    const body = JSON.parse(reply.text) as { error?: { code?: string; message?: string } };
    expect(Object.keys(body), what).toEqual(['error']);
    expect(CODES.has(body.error?.code ?? ''), `${what}: ${reply.text.slice(0, 300)}`).toBe(true);
    expect(typeof body.error?.message, what).toBe('string');
  }
}

function prototypeUntouched(): void {
  expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(PROTOTYPE_NAMES);
  expect(({} as Record<string, unknown>).polluted).toBeUndefined();
}

const PROTOTYPE_NAMES = Object.getOwnPropertyNames(Object.prototype).sort();

for (const engine of ['memory', 'redis'] as const) {
  describe(`HTTP fuzzing [${engine}]`, () => {
    let server: RedisServerHandle | undefined;
    let admin: Redis | undefined;
    let store: BubbleStore;
    let app: App;
    let token: string;

    beforeAll(async () => {
      if (engine === 'redis') {
        server = await startRedisServer();
        admin = new Redis(server.url);
        store = new RedisStore({ url: server.url, keyPrefix: 'fz', pools: 100 });
      } else {
        store = new MemoryStore();
      }
      // Its thousands of calls from one address and user would otherwise meet the client-route
      // limits (test/http/client-limits.test.ts), and answer 429 where a contract error is due.
      const unlimited = { perSecond: 1_000_000, burst: 1_000_000 };
      app = await startApp(store, {
        gateway: { clientLimits: { perUser: unlimited, perAddress: unlimited } },
      });
      token = await tokenFor('alice');
      // Something to refuse writes over: follows, posts, a conversation, a red dot.
      const seed = async (method: string, path: string, body: unknown) => {
        const reply = await send(
          app.port,
          method,
          path,
          { 'x-api-key': API_KEY, 'content-type': 'application/json' },
          Buffer.from(JSON.stringify(body)),
        );
        expect(reply.status, reply.text).toBeLessThan(300);
      };
      await seed('PUT', '/v1/users/alice/follows/bob', {});
      await seed('POST', '/v1/posts', { author: 'bob', id: 'p1', ts: Date.now() - 1000 });
      await seed('PUT', '/v1/conversations/c1/members', { members: ['alice', 'bob'] });
      await seed('POST', '/v1/conversations/c1/messages', { seq: 1, from: 'bob' });
      await seed('PUT', '/v1/reddots/settings', {});
    });

    afterAll(async () => {
      await app?.close();
      await store?.close();
      admin?.disconnect();
      await server?.stop();
    });

    it('every route answers the contract to anything, and a refused request writes nothing', async () => {
      const routes = app.gateway.routes();
      expect(routes.length).toBeGreaterThan(20);
      const credentials: Record<Credential, Record<string, string>> = {
        platform: { 'x-api-key': API_KEY },
        user: { authorization: `Bearer ${token}` },
        none: {},
        bad: { authorization: 'Bearer not.a.token', 'x-api-key': 'wrong' },
      };
      let requests = 0;
      await fc.assert(
        fc.asyncProperty(fuzzRequest(routes.length), async (fuzz) => {
          const route = routes[fuzz.routeIndex]!;
          const method = fuzz.method ?? route.method;
          const path = pathOf(route.pattern, fuzz.params) + fuzz.query;
          const headers: Record<string, string> = {
            ...Object.fromEntries(fuzz.headers),
            ...credentials[fuzz.credential],
          };
          const body = fuzz.body === null ? undefined : Buffer.from(fuzz.body);
          if (body) {
            headers['content-type'] = fuzz.contentType;
            headers['content-length'] = String(body.length);
          }
          const what = `${method} ${path.slice(0, 120)} (${fuzz.credential}) ${fuzz.body?.slice(0, 80) ?? ''}`;
          const before = admin ? await dumpAll(admin) : undefined;
          const reply = await send(app.port, method, path, headers, body);
          requests++;
          if (method !== 'HEAD') expectContractAnswer(reply, what);
          else expect(STATUSES.has(reply.status), what).toBe(true);
          prototypeUntouched();
          if (admin && before && reply.status >= 400) {
            expect(await dumpAll(admin), `a refused ${what} wrote`).toEqual(before);
          }
        }),
        { numRuns: engine === 'memory' ? 1500 : 400 },
      );
      // Still serving after all of it.
      const health = await send(app.port, 'GET', '/healthz', {});
      expect(health.status).toBe(200);
      expect(requests).toBeGreaterThan(0);
    }, 300_000);

    it('a body over 1 MiB is refused with 413 on every route that takes one, writing nothing', async () => {
      for (const route of app.gateway
        .routes()
        .filter((r) => r.method === 'POST' || r.method === 'PUT')) {
        const path = pathOf(route.pattern, ['alice', 'bob', 'c1', 'p1']);
        const before = admin ? await dumpAll(admin) : undefined;
        const reply = await send(
          app.port,
          route.method,
          path,
          {
            'x-api-key': API_KEY,
            authorization: `Bearer ${token}`,
            'content-type': 'application/json',
          },
          Buffer.alloc(1024 * 1024 + 10, 0x20),
        );
        expect([413, 401, 404, 405], `${route.method} ${path}: ${reply.text}`).toContain(
          reply.status,
        );
        if (admin) expect(await dumpAll(admin)).toEqual(before);
      }
    }, 120_000);
  });
}
