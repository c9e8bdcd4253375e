/**
 * Behind a proxy, and the limits (shared spec api.md; docs/api.md "Behind a load balancer"): a
 * real `bubble gateway` process whose BUBBLE_WS_CONNECT_RATE/BURST come from the environment.
 * With BUBBLE_TRUSTED_PROXIES naming loopback (the tests connect from it), clients with
 * different X-Forwarded-For get separate buckets; with a list that does not name loopback the
 * header is ignored and everyone shares loopback's bucket. A disallowed Origin is answered 403
 * at the upgrade, never 101. The client routes' per-user and per-address limits come from
 * BUBBLE_CLIENT_USER_RATE/BURST and BUBBLE_CLIENT_ADDRESS_RATE/BURST.
 */
import type { RoleProcess } from '@bubble/test-utils';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildOnce } from '../support/build.js';
import { rawUpgrade, type UpgradeResult } from '../support/ws-upgrade.js';
import { Deployment } from '../ws/processes.js';

/** A gateway process on this shared machine may answer slower than an in-process one. */
function upgrade(gateway: RoleProcess, headers: Record<string, string>): Promise<UpgradeResult> {
  return rawUpgrade(gateway, headers, { timeoutMs: 10_000 });
}

function expectRateLimited(result: UpgradeResult): void {
  expect(result.status, result.body).toBe(429);
  expect(JSON.parse(result.body)).toMatchObject({ error: { code: 'UB_ERR_RATE_LIMITED' } });
  // One token per 100 s, just spent: the next one is between 1 and 100 s away.
  const retryAfter = Number(result.headers['retry-after']);
  expect(Number.isInteger(retryAfter)).toBe(true);
  expect(retryAfter).toBeGreaterThan(1);
  expect(retryAfter).toBeLessThanOrEqual(100);
}

describe('a bubble gateway behind a proxy', () => {
  let deployment: Deployment;
  const BURST = 3;
  // A token per 100 s: nothing refills while a test runs, however slow the machine.
  const limits = { BUBBLE_WS_CONNECT_RATE: '0.01', BUBBLE_WS_CONNECT_BURST: String(BURST) };

  beforeAll(async () => {
    await buildOnce();
    deployment = await Deployment.start();
  }, 300_000);

  afterAll(async () => {
    await deployment?.close();
  });

  it('trusting loopback, each X-Forwarded-For client has its own bucket', async () => {
    const gateway = await deployment.spawn('gateway', {
      ...limits,
      BUBBLE_TRUSTED_PROXIES: '127.0.0.1/32,10.0.0.0/8',
    });
    const auth = { authorization: `Bearer ${await deployment.token('pat')}` };
    const first = { ...auth, 'x-forwarded-for': '198.51.100.7, 10.1.2.3' };
    for (let i = 0; i < BURST; i++) expect((await upgrade(gateway, first)).status).toBe(101);
    expectRateLimited(await upgrade(gateway, first));
    // The spoofed left part is not the client: the same right-most untrusted address, refused.
    expectRateLimited(
      await upgrade(gateway, { ...auth, 'x-forwarded-for': '203.0.113.99, 198.51.100.7' }),
    );
    // Another client behind the same proxy still upgrades, and so does one over IPv6.
    const second = { ...auth, 'x-forwarded-for': '198.51.100.8' };
    expect((await upgrade(gateway, second)).status).toBe(101);
    expect((await upgrade(gateway, { ...auth, 'x-forwarded-for': '2001:db8::8' })).status).toBe(
      101,
    );
    // Without the header the proxy itself is the client, with a bucket of its own.
    expect((await upgrade(gateway, auth)).status).toBe(101);
  });

  it('trusting other proxies only, X-Forwarded-For is ignored: one bucket for loopback', async () => {
    const gateway = await deployment.spawn('gateway', {
      ...limits,
      BUBBLE_TRUSTED_PROXIES: '10.0.0.0/8,fd00::/8',
    });
    const auth = { authorization: `Bearer ${await deployment.token('quinn')}` };
    const statuses: number[] = [];
    for (let i = 0; i < BURST; i++) {
      const forwarded = { ...auth, 'x-forwarded-for': `198.51.100.${10 + i}` };
      statuses.push((await upgrade(gateway, forwarded)).status);
    }
    expect(statuses).toEqual([101, 101, 101]);
    expectRateLimited(await upgrade(gateway, { ...auth, 'x-forwarded-for': '198.51.100.99' }));
    expectRateLimited(await upgrade(gateway, auth));
  });

  it('the client-route limits come from BUBBLE_CLIENT_USER_* and BUBBLE_CLIENT_ADDRESS_*, counted on /metrics', async () => {
    const gateway = await deployment.spawn('gateway', {
      BUBBLE_CLIENT_USER_RATE: '0.01',
      BUBBLE_CLIENT_USER_BURST: '2',
      BUBBLE_CLIENT_ADDRESS_RATE: '0.01',
      BUBBLE_CLIENT_ADDRESS_BURST: '4',
      BUBBLE_TRUSTED_PROXIES: '127.0.0.1/32',
    });
    const poll = async (user: string, address: string) => {
      const res = await fetch(`${gateway.url}/v1/badge`, {
        headers: {
          authorization: `Bearer ${await deployment.token(user)}`,
          'x-forwarded-for': address,
        },
      });
      const body = await res.text();
      return { status: res.status, body, retryAfter: res.headers.get('retry-after') };
    };
    const expectRefused = (reply: Awaited<ReturnType<typeof poll>>) => {
      expect(reply.status, reply.body).toBe(429);
      expect(JSON.parse(reply.body)).toMatchObject({ error: { code: 'UB_ERR_RATE_LIMITED' } });
      const seconds = Number(reply.retryAfter);
      expect(Number.isInteger(seconds) && seconds >= 1 && seconds <= 100).toBe(true);
    };
    // Per user: two polls, then refused, from whichever address.
    expect((await poll('uma', '198.51.100.1')).status).toBe(200);
    expect((await poll('uma', '198.51.100.2')).status).toBe(200);
    expectRefused(await poll('uma', '198.51.100.3'));
    // Per address: four calls of different users, then refused for a fifth user.
    for (const user of ['vic', 'wes', 'xia', 'yan'])
      expect((await poll(user, '203.0.113.5')).status).toBe(200);
    expectRefused(await poll('zed', '203.0.113.5'));
    const metrics = await (await fetch(`${gateway.url}/metrics`)).text();
    expect(metrics).toMatch(/^bubble_http_rate_limited_total\{limit="user"\} 1$/m);
    expect(metrics).toMatch(/^bubble_http_rate_limited_total\{limit="address"\} 1$/m);
  });

  it('an Origin outside BUBBLE_ALLOWED_ORIGINS is refused 403 at the upgrade, never 101', async () => {
    const gateway = await deployment.spawn('gateway', {
      BUBBLE_ALLOWED_ORIGINS: 'https://app.example,https://admin.example',
    });
    const auth = { authorization: `Bearer ${await deployment.token('rue')}` };
    for (const headers of [
      { ...auth, origin: 'https://evil.example' },
      { origin: 'https://app.example.evil.example' },
      { ...auth, origin: 'null' },
    ]) {
      const refused = await upgrade(gateway, headers);
      expect(refused.status, refused.body).toBe(403);
      expect(refused.headers['content-type']).toMatch(/^application\/json/);
      expect(JSON.parse(refused.body)).toMatchObject({ error: { code: 'UB_ERR_FORBIDDEN' } });
    }
    expect((await upgrade(gateway, { ...auth, origin: 'https://app.example' })).status).toBe(101);
    // no Origin: not a browser, not checked
    expect((await upgrade(gateway, auth)).status).toBe(101);
  });
});
