/**
 * Protocol-level heartbeats (shared spec api.md "WebSocket"): the gateway pings every socket and
 * cuts off one that did not answer the last ping, as a peer that died without closing (a pulled
 * cable, a frozen phone) never does; its user goes offline with their last socket. A peer that
 * answers stays, however many heartbeats pass.
 */
import { HEARTBEAT_MS, PONG_TIMEOUT_MS } from '@bubble/gateway';
import { waitFor } from '@bubble/test-utils';
import { describe, expect, it } from 'vitest';
import { ENGINES, useEngine } from './support.js';
import { connect, ids } from './live-client.js';

for (const engine of ENGINES) {
  describe(`WebSocket heartbeats [${engine}]`, () => {
    const rig = useEngine(engine);

    it('a peer that stops answering pings is cut off and goes offline; one that answers stays', async () => {
      const app = await rig.start({ heartbeatMs: 600, pongTimeoutMs: 300, core: false });
      const [silent, healthy] = ids('hb', 2) as [string, string];
      const online = (user: string) => app.store.presence.isOnline(user);
      // Asked first: the silent peer is online only until its first unanswered ping.
      const mute = await connect(app, silent, 'mute', { autoPong: false });
      expect(await online(silent)).toBe(true);
      const answering = await connect(app, healthy, 'answering');
      let pingsAnswered = 0;
      answering.ws.on('ping', () => pingsAnswered++);

      // Terminated, not closed: no close frame reaches the peer (1006 on its side).
      expect((await mute.waitClose(5_000)).code).toBe(1006);
      await waitFor(async () => !(await online(silent)), {
        message: 'the silent peer is still online',
      });
      await waitFor(() => app.gateway.ws!.connections === 1, {
        message: 'the gateway kept the silent socket',
      });

      // The answering peer lives through more heartbeats than the silent one got.
      await waitFor(() => pingsAnswered >= 5 || answering.closed !== null, {
        timeoutMs: 15_000,
        message: 'the gateway stopped pinging',
      });
      expect(answering.closed).toBeNull();
      await answering.roundTrip();
      expect(await online(healthy)).toBe(true);
    });

    it.runIf(engine === 'memory')(
      'by default a half-open socket (the peer stops reading and answering) is gone within 25 s + 8 s, and its presence lapses',
      async () => {
        expect([HEARTBEAT_MS, PONG_TIMEOUT_MS]).toEqual([25_000, 8_000]);
        const app = await rig.start({ core: false });
        const [vanished] = ids('half-open', 1) as [string];
        const peer = await connect(app, vanished, 'vanished', { autoPong: false });
        const since = Date.now();
        // The peer's machine is gone: nothing is read from its socket again, nothing answered.
        (peer.ws as unknown as { _socket: { pause(): void } })._socket.pause();
        await waitFor(() => app.gateway.ws!.connections === 0, {
          timeoutMs: HEARTBEAT_MS + PONG_TIMEOUT_MS + 10_000,
          intervalMs: 200,
          message: 'the half-open socket outlived ping interval + pong timeout',
        });
        const gone = Date.now() - since;
        expect(gone).toBeLessThan(HEARTBEAT_MS + PONG_TIMEOUT_MS + 10_000);
        await waitFor(async () => !(await app.store.presence.isOnline(vanished)), {
          message: 'the vanished peer is still online',
        });
      },
      60_000,
    );
  });
}
