/**
 * Protocol-level heartbeats (shared spec api.md "WebSocket"): the gateway pings every socket and
 * cuts off one that did not answer the last ping, as a peer that died without closing (a pulled
 * cable, a frozen phone) never does; its user goes offline with their last socket. A peer that
 * answers stays, however many heartbeats pass.
 */
import { waitFor } from '@bubble/test-utils';
import { describe, expect, it } from 'vitest';
import { ENGINES, connect, ids, useEngine } from './support.js';

for (const engine of ENGINES) {
  describe(`WebSocket heartbeats [${engine}]`, () => {
    const rig = useEngine(engine);

    it('a peer that stops answering pings is cut off and goes offline; one that answers stays', async () => {
      const app = await rig.start({ heartbeatMs: 200, core: false });
      const [silent, healthy] = ids('hb', 2) as [string, string];
      const online = (user: string) => app.store.presence.isOnline(user);
      const mute = await connect(app, silent, 'mute', { autoPong: false });
      const answering = await connect(app, healthy, 'answering');
      let pingsAnswered = 0;
      answering.ws.on('ping', () => pingsAnswered++);
      expect(await online(silent)).toBe(true);

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
        timeoutMs: 5_000,
        message: 'the gateway stopped pinging',
      });
      expect(answering.closed).toBeNull();
      await answering.roundTrip();
      expect(await online(healthy)).toBe(true);
    });
  });
}
