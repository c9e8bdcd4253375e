/**
 * Connections that end or fail before they are admitted (issue 39). One that ends while it is
 * being authenticated or attached leaves nobody online
 * (issue 39, "a dropped connection can leave its user online forever"): a socket that sends
 * `auth` and is cut at once had its close handled before the token check ended, and the attach
 * that followed was never undone: 7–13 of 30 users stayed held with no socket and got no
 * offline delivery. Here each of 30 users sends `auth` and ends the TCP connection in the same
 * write; every close is handled, and then no user may be held or online. And one that never
 * authenticates gives its place among the connections being admitted back when the gateway
 * closes it, not when (if ever) the client answers that close: clients that hold silent
 * sockets open made a valid client's upgrade answer 503.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type net from 'node:net';
import { waitFor } from '@bubble/test-utils';
import { afterEach, describe, expect, it } from 'vitest';
import { Client, connect } from './live-client.js';
import { ENGINES, tokenFor, useEngine } from './support.js';

/**
 * An upgraded socket that never sends a frame and never answers a close (a client that holds
 * its connection open after the gateway gave up on it); `closeSent` once the gateway's close
 * frame arrived.
 */
function silentSocket(port: number): Promise<{ socket: net.Socket; closeSent: () => boolean }> {
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: '127.0.0.1',
      port,
      path: '/v1/ws',
      agent: false,
      headers: {
        connection: 'Upgrade',
        upgrade: 'websocket',
        'sec-websocket-version': '13',
        'sec-websocket-key': randomBytes(16).toString('base64'),
      },
    });
    req.on('upgrade', (res, socket) => {
      if (res.statusCode !== 101) reject(new Error(`upgrade answered ${res.statusCode}`));
      let closeSent = false;
      // 0x88: a final close frame, unmasked from the server.
      socket.on('data', (chunk: Buffer) => (closeSent ||= chunk.includes(0x88)));
      socket.on('error', () => {});
      resolve({ socket, closeSent: () => closeSent });
    });
    req.on('response', (res) => reject(new Error(`upgrade answered ${res.statusCode}`)));
    req.on('error', reject);
    req.end();
  });
}

const USERS = 30;

for (const engine of ENGINES) {
  describe(`attach races [${engine}]`, () => {
    const rig = useEngine(engine);

    it('a socket cut right after its auth frame leaves its user neither held nor online', async () => {
      const app = await rig.start({ core: false });
      const users = Array.from({ length: USERS }, (_, i) => `race${i}`);
      const tokens = await Promise.all(users.map((user) => tokenFor(user)));
      const clients = users.map((user) => Client.open(app, {}, user));
      await Promise.all(clients.map((client) => client.opened));
      // The frame and the end of the connection in one write: the gateway reads both at once,
      // and handles the close while the token is still being checked.
      clients.forEach((client, i) => {
        const socket = (client.ws as unknown as { _socket: net.Socket })._socket;
        socket.cork();
        client.send({ type: 'auth', token: tokens[i]! });
        socket.end();
        socket.uncork();
      });
      await waitFor(() => app.gateway.ws!.connections === 0, {
        message: 'the gateway still counts sockets that were cut',
      });
      await waitFor(() => app.gateway.liveUsers!.size === 0, {
        timeoutMs: 5000,
        message: `users held with no socket: ${app.gateway.liveUsers!.size}`,
      });
      await waitFor(
        async () =>
          (await Promise.all(users.map((user) => app.store.presence.isOnline(user)))).every(
            (online) => !online,
          ),
        { timeoutMs: 5000, message: 'a user whose socket was cut is still online' },
      );
    });
  });
}

describe('admission places of connections that never authenticate', () => {
  const rig = useEngine('memory');
  const held: net.Socket[] = [];
  afterEach(() => {
    for (const socket of held.splice(0)) socket.destroy();
  });

  it('are free once the gateway closes them, though their clients never answer the close', async () => {
    const app = await rig.start({ core: false, maxAdmitting: 4, authTimeoutMs: 100 });
    const port = Number(new URL(app.url).port);
    const silent: Array<{ socket: net.Socket; closeSent: () => boolean }> = [];
    for (let i = 0; i < 4; i++) silent.push(await silentSocket(port));
    held.push(...silent.map(({ socket }) => socket));
    // Each is sent its 4401 after 100 ms; none answers it.
    await waitFor(() => silent.every(({ closeSent }) => closeSent()), {
      message: 'the gateway never closed the silent sockets',
    });
    const client = await connect(app, 'admitted');
    expect(client.lastBadge?.user).toBe('admitted');
    client.close();
  });
});
