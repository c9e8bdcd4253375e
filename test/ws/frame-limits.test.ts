/**
 * WebSocket frames draw on the per-user budget of the client routes (issue 39, "WebSocket
 * frames skip the limits"): a user sent 1,101 `read` frames a second on Redis (5/s over HTTP)
 * and 28k/s in memory, and the core then rebuilt pools over the gaps in its logs. Each `read`
 * and `watch` frame is now charged to the bucket the user's HTTP calls draw from (burst 40,
 * then 5/s by default); one over it gets an `error` frame UB_ERR_RATE_LIMITED and changes
 * nothing.
 */
import { waitFor } from '@bubble/test-utils';
import { describe, expect, it } from 'vitest';
import { httpCall } from '../support/http.js';
import { connect } from './live-client.js';
import { ENGINES, tokenFor, useEngine } from './support.js';

const FRAMES = 100;

for (const engine of ENGINES) {
  describe(`frame limits [${engine}]`, () => {
    const rig = useEngine(engine);

    it('read frames past the user budget are refused with an error frame, and so is HTTP after them', async () => {
      const app = await rig.start({ core: false });
      const client = await connect(app, 'flooder');
      const badgesBefore = client.badges.length;
      for (let i = 0; i < FRAMES; i++) client.send({ type: 'read', scope: 'feed' });
      const errors = () =>
        client.frames.filter((f) => f.type === 'error' && f.code === 'UB_ERR_RATE_LIMITED');
      const answered = () => client.badges.length - badgesBefore + errors().length;
      await waitFor(() => answered() >= FRAMES, {
        message: `answers to ${FRAMES} read frames`,
      });
      // The burst (40) and what refilled meanwhile went through; the rest did not.
      expect(errors().length).toBeGreaterThan(FRAMES / 2);
      expect(client.badges.length - badgesBefore).toBeLessThan(FRAMES / 2);
      // The same bucket: the user's HTTP calls are refused now too.
      const reply = await httpCall(app.url, 'GET', '/v1/badge', {
        token: await tokenFor('flooder'),
      });
      expect(reply.status).toBe(429);
      // Another user is not touched.
      const other = await httpCall(app.url, 'GET', '/v1/badge', { token: await tokenFor('calm') });
      expect(other.status).toBe(200);
      client.close();
    });
  });
}
