/**
 * A draining gateway (SIGTERM, HttpGateway.close) closes its sockets with 1001 paced: at most
 * BUBBLE_WS_DRAIN_RATE a second and all within BUBBLE_WS_DRAIN_MAX_MS, so the gateways left see
 * the clients come at a rate they can admit (docs/security.md "Reconnect storm"). Until its turn
 * a socket is served as before, and nothing new is admitted.
 */
import { describe, expect, it } from 'vitest';
import { CLOSE, ENGINES, follow, ingest, tokenFor, useEngine, type LiveApp } from './support.js';
import { Client, connect, ids } from './live-client.js';
import { httpCall } from '../support/http.js';

const SOCKETS = 20;

/** Opens one socket per user, each following `author` and holding its first badge. */
async function openAll(app: LiveApp, users: string[], author: string): Promise<Client[]> {
  for (const user of users) await follow(app, user, author);
  const clients: Client[] = [];
  for (const user of users) clients.push(await connect(app, user));
  return clients;
}

/** Resolves each client's close with the time it came. */
function closeTimes(clients: Client[]): Promise<number[]> {
  return Promise.all(
    clients.map(
      (c) => new Promise<number>((resolve) => c.ws.once('close', () => resolve(Date.now()))),
    ),
  );
}

describe.each(ENGINES)('paced drain [%s]', (engine) => {
  const rig = useEngine(engine);

  it('closes every socket with 1001 at the drain rate, serving those not yet closed, admitting nothing new', async () => {
    // 20 sockets at 5 a second: the last is closed about 4 s after the first.
    const app = await rig.start({ drainRate: 5, drainMaxMs: 30_000 });
    const users = ids('drain-u', SOCKETS);
    await ingest(app, [{ author: 'drain-a', id: 'p1', ts: Date.now() - 60_000 }]);
    const clients = await openAll(app, users, 'drain-a');
    for (const c of clients) expect(c.lastBadge!.feed).toBe(1);
    const closed = closeTimes(clients);

    const draining = app.gateway.close();
    // A post during the drain reaches the sockets whose turn has not come.
    await app.service.ingestPosts([{ author: 'drain-a', id: 'p2', ts: Date.now() - 1_000 }]);
    const last = clients[SOCKETS - 1]!;
    const pushed = await last.waitBadge((b) => b.feed === 2, {
      timeoutMs: 15_000,
      message: 'the last socket to be closed got no push during the drain',
    });
    expect(pushed.user).toBe(users[SOCKETS - 1]);
    expect(last.closed).toBeNull();
    // Nothing new is admitted meanwhile, and the gateway says it is not ready.
    const late = Client.open(app, { token: await tokenFor('drain-late') }, 'late');
    await expect(late.opened).rejects.toThrow(/503/);
    expect((await httpCall(app.url, 'GET', '/readyz')).status).toBe(503);

    const times = await closed;
    await draining;
    for (const c of clients)
      expect(c.closed).toEqual({ code: CLOSE.goingAway, reason: 'draining' });
    // Paced, not at once: 20 sockets at 5/s span about 3.8 s (19 gaps of 50 ms slices).
    expect(Math.max(...times) - Math.min(...times)).toBeGreaterThanOrEqual(3_000);
  }, 60_000);

  it('spreads its closes over at most BUBBLE_WS_DRAIN_MAX_MS whatever the rate', async () => {
    // At 1 a second 20 sockets would take 19 s; the bound makes it 500 ms.
    const app = await rig.start({ drainRate: 1, drainMaxMs: 500 });
    const clients = await openAll(app, ids('bounded-u', SOCKETS), 'bounded-a');
    const closed = closeTimes(clients);
    const started = Date.now();
    await app.gateway.close();
    const times = await closed;
    for (const c of clients) expect(c.closed?.code).toBe(CLOSE.goingAway);
    expect(Math.max(...times) - started).toBeLessThan(10_000);
  }, 60_000);
});
