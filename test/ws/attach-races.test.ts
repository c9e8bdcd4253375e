/**
 * A connection that ends while it is being authenticated or attached leaves nobody online
 * (issue 39, "a dropped connection can leave its user online forever"): a socket that sends
 * `auth` and is cut at once had its close handled before the token check ended, and the attach
 * that followed was never undone: 7–13 of 30 users stayed held with no socket and got no
 * offline delivery. Here each of 30 users sends `auth` and ends the TCP connection in the same
 * write; every close is handled, and then no user may be held or online.
 */
import type net from 'node:net';
import { waitFor } from '@bubble/test-utils';
import { describe, it } from 'vitest';
import { Client } from './live-client.js';
import { ENGINES, tokenFor, useEngine } from './support.js';

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
