/**
 * The SDK's `url` list and `wsUrl` (packages/client/README.md "Gateways"), over real sockets to
 * two small protocol gateways (./support.ts): sockets rotate over the list, HTTP calls go to the
 * gateway of the latest socket, and `wsUrl` sends the socket elsewhere than `url`. The same
 * options against real bubble processes: test/ws/gateway-kill.test.ts, test/ws/sdk-fallback.test.ts.
 */
import { BubbleClient, type BubbleClientOptions } from '@bubble/client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { FakeGateway, GOOD, next, TestTimers, until } from './support.js';

let one: FakeGateway;
let two: FakeGateway;
let client: BubbleClient | undefined;

beforeEach(async () => {
  [one, two] = await Promise.all([FakeGateway.start(), FakeGateway.start()]);
});

afterEach(async () => {
  client?.close();
  client = undefined;
  await Promise.all([one.close(), two.close()]);
});

function start(options: Partial<BubbleClientOptions>): BubbleClient {
  client = new BubbleClient({
    url: one.url,
    token: GOOD,
    WebSocket,
    timers: new TestTimers(0.01),
    pingIntervalMs: 0,
    connectTimeoutMs: 600_000, // (a scaled 10 s would be 100 ms: too short on a busy machine)
    ...options,
  });
  client.start();
  return client;
}

describe('BubbleClient with several gateways', () => {
  it('moves to the next gateway of the list for each new socket, round robin', async () => {
    one.refuseUpgrades = Infinity;
    const c = start({ url: [one.url, two.url] });
    await next(c, 'state', (s) => s === 'open', 10_000);
    expect([one.upgrades, two.upgrades]).toEqual([1, 1]);

    // The socket on `two` is lost: the next attempt goes to `one` (refused), then `two` again.
    two.sockets[0]!.ws.terminate();
    await until(() => two.open.length === 1 && two.upgrades === 2, 'a second socket on two');
    expect(one.upgrades).toBe(2);
  });

  it('sends HTTP calls to the gateway of the latest socket', async () => {
    one.refuseUpgrades = Infinity;
    two.answerReads = false; // a read sent over the socket goes over HTTP after readTimeoutMs
    const c = start({ url: [one.url, two.url], readTimeoutMs: 100 });
    await next(c, 'state', (s) => s === 'open', 10_000);
    await c.read({ scope: 'all' });
    expect(two.requests.map((r) => `${r.method} ${r.path}`)).toEqual(['POST /v1/badge/read']);
    expect(one.requests).toEqual([]);
  });

  it('connects sockets to wsUrl and sends HTTP calls to url', async () => {
    two.refuseUpgrades = 3;
    const c = start({
      url: one.url,
      wsUrl: two.url.replace(/^http/, 'ws') + '/v1/ws',
      random: () => 0.999, // the fourth socket comes well after the first poll
    });
    await next(c, 'state', (s) => s === 'open', 10_000);
    expect([one.upgrades, two.upgrades]).toEqual([0, 4]);
    expect(one.requests.map((r) => `${r.method} ${r.path}`)).toContain('GET /v1/badge');
    expect(two.requests).toEqual([]);
  });

  it('refuses an empty list', () => {
    expect(() => new BubbleClient({ url: [], token: GOOD, WebSocket })).toThrow(/lists no URL/);
  });
});
