/**
 * Authentication of GET /v1/ws (docs/protocol.md "Connecting", shared spec api.md
 * "Authentication" and "WebSocket"): a bad token in the upgrade's header is answered HTTP 401
 * and never 101; the same tokens in a first `auth` frame, any other first frame, or silence for
 * 5 s close with 4401. Also the per-IP new-connection limit (429 with Retry-After) and the origin
 * allowlist (403 at the upgrade, before any 101).
 */
import type net from 'node:net';
import { SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { waitFor } from '@bubble/test-utils';
import { CLOSE, ENGINES, JWT_SECRET, tokenFor, useEngine, type LiveApp } from './support.js';
import { Client, expectRefused, ms, nextLocalAddress, rawUpgrade } from './live-client.js';

const AUDIENCE = 'bubble-ws-test';

/** Sends `frames` in one TCP write, so the gateway receives them in one chunk. */
function sendTogether(client: Client, frames: unknown[]): void {
  const socket = (client.ws as unknown as { _socket: net.Socket })._socket;
  socket.cork();
  for (const frame of frames) client.send(frame);
  socket.uncork();
}
const key = new TextEncoder().encode(JWT_SECRET);
const now = (): number => Math.floor(Date.now() / 1000);
const b64url = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');

function sign(
  claims: Record<string, unknown>,
  options: { alg?: string; secret?: Uint8Array } = {},
): Promise<string> {
  return new SignJWT(claims)
    .setProtectedHeader({ alg: options.alg ?? 'HS256', typ: 'JWT' })
    .sign(options.secret ?? key);
}

/** Replaces one character in the middle of the signature (never a padding-only bit). */
function tamperSignature(token: string): string {
  const [h, p, s] = token.split('.') as [string, string, string];
  const i = Math.floor(s.length / 2);
  const swapped = s[i] === 'A' ? 'B' : 'A';
  return `${h}.${p}.${s.slice(0, i)}${swapped}${s.slice(i + 1)}`;
}

/** Every way a token can be wrong, each with the header value it is sent with. */
async function badCredentials(): Promise<Array<{ name: string; header: string; token: string }>> {
  const good = { sub: 'alice', aud: AUDIENCE, exp: now() + 600 };
  const valid = await sign(good);
  const [, validPayload, validSig] = valid.split('.') as [string, string, string];
  const cases: Array<{ name: string; token: string; header?: string }> = [
    {
      name: 'expired (exp 60 s ago, beyond the 5 s tolerance)',
      token: await sign({ ...good, exp: now() - 60 }),
    },
    { name: 'tampered signature', token: tamperSignature(valid) },
    {
      name: 'tampered payload (another sub, the original signature)',
      token: `${valid.split('.')[0]}.${b64url({ ...good, sub: 'mallory' })}.${validSig}`,
    },
    {
      name: 'alg none (unsigned)',
      token: `${b64url({ alg: 'none', typ: 'JWT' })}.${b64url(good)}.`,
    },
    {
      name: 'alg none with the original signature',
      token: `${b64url({ alg: 'none', typ: 'JWT' })}.${validPayload}.${validSig}`,
    },
    { name: 'HS512 with the right secret', token: await sign(good, { alg: 'HS512' }) },
    {
      name: 'signed with another secret',
      token: await sign(good, { secret: new TextEncoder().encode('another-secret-0123456789ab') }),
    },
    { name: 'wrong audience', token: await sign({ ...good, aud: 'someone-else' }) },
    { name: 'no audience', token: await sign({ sub: 'alice', exp: now() + 600 }) },
    { name: 'sub not a valid id', token: await sign({ ...good, sub: 'not a valid id!' }) },
    { name: 'sub too long', token: await sign({ ...good, sub: 'x'.repeat(65) }) },
    { name: 'sub not a string', token: await sign({ ...good, sub: 42 }) },
    { name: 'no sub', token: await sign({ aud: AUDIENCE, exp: now() + 600 }) },
    { name: 'no exp', token: await sign({ sub: 'alice', aud: AUDIENCE }) },
    { name: 'not a JWT', token: 'definitely-not-a-jwt' },
    { name: 'oversized', token: `${valid}${'A'.repeat(5000)}` },
  ];
  const withHeaders = cases.map((c) => ({ ...c, header: `Bearer ${c.token}` }));
  // Header-only variants: the scheme is missing or wrong.
  withHeaders.push(
    { name: 'missing "Bearer"', header: valid, token: '' },
    {
      name: 'Basic scheme',
      header: `Basic ${Buffer.from('alice:pw').toString('base64')}`,
      token: '',
    },
    { name: 'empty header', header: '', token: '' },
    { name: '"Bearer" and nothing', header: 'Bearer ', token: '' },
  );
  return withHeaders;
}

async function expectNoConnections(app: LiveApp): Promise<void> {
  await waitFor(() => app.gateway.ws!.connections === 0, { message: 'a socket was kept' });
  expect(app.gateway.liveUsers!.size).toBe(0);
  // (letting a user go ends with an asynchronous setOffline)
  await waitFor(async () => !(await app.store.presence.isOnline('alice')), {
    message: 'alice is still online',
  });
}

for (const engine of ENGINES) {
  describe(`WebSocket authentication [${engine}]`, () => {
    const rig = useEngine(engine);
    const start = () => rig.start({ jwtAudience: AUDIENCE, core: false });

    it('a bad token in the upgrade header is HTTP 401 with the error body, never a 101', async () => {
      const app = await start();
      const cases = await badCredentials();
      for (const c of cases) {
        const result = await rawUpgrade(app, { authorization: c.header });
        try {
          expectRefused(result, 401, 'UB_ERR_UNAUTHORIZED');
          expect(result.headers.connection).toBe('close');
        } catch (err) {
          throw new Error(`${c.name}: ${(err as Error).message}`);
        }
      }
      await expectNoConnections(app);

      // the same through the `ws` client: 'unexpected-response' with 401, never 'open'
      const expired = cases[0]!;
      const client = Client.open(app, { headers: { authorization: expired.header } }, 'expired');
      let opened = false;
      client.ws.on('open', () => (opened = true));
      await waitFor(() => client.unexpected, { message: 'no HTTP answer' });
      expect(client.unexpected!.status).toBe(401);
      expect(JSON.parse(client.unexpected!.body)).toMatchObject({
        error: { code: 'UB_ERR_UNAUTHORIZED' },
      });
      expect(opened).toBe(false);

      // positive controls: a valid token, and one expired by less than the 5 s tolerance
      const ok = await rawUpgrade(app, {
        authorization: `Bearer ${await tokenFor('alice', 600, AUDIENCE)}`,
      });
      expect(ok.status).toBe(101);
      const lenient = await rawUpgrade(app, {
        authorization: `Bearer ${await sign({ sub: 'alice', aud: AUDIENCE, exp: now() - 2 })}`,
      });
      expect(lenient.status).toBe(101);
    });

    it('a token or key in the query string is refused with 401 before any 101, even beside a valid header', async () => {
      const app = await start();
      const valid = await tokenFor('alice', 600, AUDIENCE);
      for (const query of [
        `token=${valid}`,
        `access_token=${valid}`,
        'jwt=x',
        'api_key=x',
        'Key=x',
      ]) {
        for (const headers of [{}, { authorization: `Bearer ${valid}` }] as Record<
          string,
          string
        >[]) {
          const result = await rawUpgrade(app, headers, { path: `/v1/ws?${query}` });
          try {
            expectRefused(result, 401, 'UB_ERR_UNAUTHORIZED');
          } catch (err) {
            throw new Error(
              `${query}, ${Object.keys(headers).length} headers: ${(err as Error).message}`,
            );
          }
        }
      }
      await expectNoConnections(app);
      // Other query parameters are none of our business.
      const ok = await rawUpgrade(
        app,
        { authorization: `Bearer ${valid}` },
        { path: '/v1/ws?v=2' },
      );
      expect(ok.status).toBe(101);
    });

    it('the same bad tokens in a first auth frame close with 4401', async () => {
      const app = await start();
      // (the oversized token would not fit in a frame: that is a 1009, see frames.test.ts)
      const cases = (await badCredentials()).filter(
        (c) => c.token !== '' && !c.name.startsWith('oversized'),
      );
      const clients = cases.map((c) => Client.open(app, {}, c.name));
      await Promise.all(clients.map((c) => c.opened));
      clients.forEach((client, i) => client.send({ type: 'auth', token: cases[i]!.token }));
      for (const client of clients) {
        const closed = await client.waitClose();
        expect(closed.code, client.label).toBe(CLOSE.authFailed);
        expect(client.badges, client.label).toEqual([]);
      }
      await expectNoConnections(app);

      // frames that are not an auth with a string token
      const firsts: unknown[] = [
        { type: 'auth' },
        { type: 'auth', token: 42 },
        { type: 'auth', token: null },
        { type: 'auth', token: '' },
        { type: 'read', scope: 'all' },
        { type: 'ping' },
      ];
      const more = firsts.map((_, i) => Client.open(app, {}, `first frame ${i}`));
      await Promise.all(more.map((c) => c.opened));
      more.forEach((client, i) => client.send(firsts[i]));
      for (const [i, client] of more.entries()) {
        expect((await client.waitClose()).code, JSON.stringify(firsts[i])).toBe(CLOSE.authFailed);
        expect(client.frames).toEqual([]);
      }

      // positive control: a good token in the first frame gets the badge
      const good = Client.open(app, {}, 'good');
      await good.opened;
      good.send({ type: 'auth', token: await tokenFor('alice', 600, AUDIENCE) });
      const badge = await good.waitBadge((b) => b.user === 'alice');
      expect(badge).toMatchObject({ user: 'alice', feed: 0 });
      await good.roundTrip();
      expect(await app.store.presence.isOnline('alice')).toBe(true);
      // a second auth on an authenticated socket is a policy violation
      good.send({ type: 'auth', token: await tokenFor('alice', 600, AUDIENCE) });
      expect((await good.waitClose()).code).toBe(CLOSE.policy);
      await expectNoConnections(app);
    });

    if (engine === 'memory') {
      it('no auth frame within 5 s closes with 4401', async () => {
        const app = await start();
        const began = Date.now();
        const silent = Client.open(app, {}, 'silent');
        await silent.opened;
        // A header-authenticated socket opened at the same time is not subject to the timer.
        const other = Client.open(app, { token: await tokenFor('bob', 600, AUDIENCE) }, 'bob');
        await other.waitBadge((b) => b.user === 'bob');
        const closed = await silent.waitClose(9000);
        const elapsed = ms(began);
        expect(closed.code).toBe(CLOSE.authFailed);
        expect(elapsed).toBeGreaterThanOrEqual(4900);
        expect(elapsed).toBeLessThan(8000);
        expect(silent.frames).toEqual([]);
        await other.roundTrip();
        expect(other.closed).toBeNull();
      }, 15_000);

      // Regression: frames were handled concurrently, so a frame arriving while the first-frame
      // token was still being verified was closed with 4401. A connection's frames now queue.
      it('a frame right behind a valid auth frame waits for it and is answered', async () => {
        const app = await start();
        const token = await tokenFor('erin', 600, AUDIENCE);
        const client = Client.open(app, {}, 'pipelined');
        await client.opened;
        sendTogether(client, [{ type: 'auth', token }, { type: 'ping' }]);
        await waitFor(() => client.closed || client.frames.some((f) => f.type === 'pong'));
        expect(client.closed).toBeNull();
        expect(client.badges[0]?.user).toBe('erin');
      });

      // Regression: two pipelined auth frames both attached the user, and the close detached only
      // once, leaking presence. The contract: a second auth is a 1008.
      it('a second pipelined auth is a 1008 and leaks no presence', async () => {
        const app = await start();
        const token = await tokenFor('frank', 600, AUDIENCE);
        const client = Client.open(app, {}, 'double auth');
        await client.opened;
        sendTogether(client, [
          { type: 'auth', token },
          { type: 'auth', token },
        ]);
        await waitFor(() => client.closed || client.badges.length > 0);
        client.close();
        await client.waitClose();
        await waitFor(() => app.gateway.ws!.connections === 0);
        await waitFor(async () => !(await app.store.presence.isOnline('frank')), {
          timeoutMs: 3000,
          message: 'the user stayed online after their only socket closed',
        });
        expect(app.gateway.liveUsers!.size).toBe(0);
        expect(client.closed?.code).toBe(CLOSE.policy);
      });

      it('a browser origin outside BUBBLE_ALLOWED_ORIGINS is refused 403 before any 101', async () => {
        const app = await rig.start({ core: false, allowedOrigins: ['https://app.example'] });
        const token = await tokenFor('carol');
        const foreign = await rawUpgrade(app, {
          authorization: `Bearer ${token}`,
          origin: 'https://evil.example',
        });
        expectRefused(foreign, 403, 'UB_ERR_FORBIDDEN');
        // nor by the first-frame route
        const unauthenticated = await rawUpgrade(app, { origin: 'https://evil.example' });
        expectRefused(unauthenticated, 403, 'UB_ERR_FORBIDDEN');
        const allowed = Client.open(app, { token, headers: { origin: 'https://app.example' } });
        await allowed.waitBadge((b) => b.user === 'carol');
        // no Origin header: not a browser, not checked
        const native = Client.open(app, { token });
        await native.waitBadge((b) => b.user === 'carol');
      });

      it('past the per-IP burst of new connections the upgrade is answered 429', async () => {
        const app = await start();
        const address = nextLocalAddress();
        const statuses: number[] = [];
        for (let i = 0; i < 60; i++) {
          const result = await rawUpgrade(
            app,
            { authorization: 'Bearer nope' },
            {
              localAddress: address,
            },
          );
          statuses.push(result.status);
          if (result.status === 429) {
            expectRefused(result, 429, 'UB_ERR_RATE_LIMITED');
            // the default rate is 20/s: the next token is at most a second away
            expect(result.headers['retry-after']).toBe('1');
            break;
          }
        }
        expect(statuses.at(-1)).toBe(429);
        expect(statuses.slice(0, 40).every((s) => s === 401)).toBe(true);
        // another address is not limited
        const fresh = await rawUpgrade(
          app,
          { authorization: `Bearer ${await tokenFor('dave', 600, AUDIENCE)}` },
          { localAddress: nextLocalAddress() },
        );
        expect(fresh.status).toBe(101);
      });
    }
  });
}
