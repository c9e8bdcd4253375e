/**
 * `POST /v1/cursors` for a user online on two devices: the core holding them learns of the
 * moved cursors through their pool log (a `cursor` and a `marks` event), as after a read, and
 * pushes the new badge to both; a user online beside them, not in the call, gets no change.
 * Real servers (the live rig of test/ws: a gateway with WebSockets, a core, a scheduler) on
 * memory and on a real redis-server; the core's safety net is off, so only the pool log can
 * bring the change. No sleeps: every wait has a deadline.
 */
import { describe, expect, it } from 'vitest';
import { connect, expectPushed, expectVersionsIncrease } from '../ws/live-client.js';
import { ENGINES, follow, ingest, platform, useEngine, type Badge } from '../ws/support.js';

const PUSH_DEADLINE_MS = 20_000;

const countsOf = (badge: Badge) => ({
  feed: badge.feed,
  notices: badge.notices,
  conversations: badge.conversations,
});

async function expectStatus(reply: Promise<{ status: number; text: string }>, status: number) {
  const answered = await reply;
  expect(answered.status, answered.text).toBe(status);
}

for (const engine of ENGINES) {
  describe(`POST /v1/cursors pushes to a user online [${engine}]`, () => {
    const rig = useEngine(engine);

    it('the migrated cursors reach every device of the user held by the core', async () => {
      const app = await rig.start({ reconcilePerSweep: 0 });
      const a = await connect(app, 'migrated', 'A');
      const b = await connect(app, 'migrated', 'B');
      const bystander = await connect(app, 'bystander');
      const now = Date.now();
      await follow(app, 'migrated', 'author');
      await follow(app, 'bystander', 'author');
      await expectStatus(
        platform(app, 'PUT', '/v1/conversations/c7/members', { members: ['migrated', 'peer'] }),
        204,
      );
      const before = { feed: 3, notices: 2, conversations: { c7: 4 } };
      await expectPushed(
        [a, b],
        'the sources',
        async () => {
          await ingest(
            app,
            [3000, 2000, 1000].map((age) => ({ author: 'author', id: `p${age}`, ts: now - age })),
          );
          for (const id of [1, 2]) {
            await expectStatus(platform(app, 'POST', '/v1/notices', { id }), 202);
          }
          const messages = [1, 2, 3, 4].map((seq) => ({ seq, from: 'peer' }));
          await expectStatus(
            platform(app, 'POST', '/v1/conversations/c7/messages', { messages }),
            202,
          );
        },
        countsOf,
        before,
        PUSH_DEADLINE_MS,
      );
      const bystanderBefore = bystander.badges.length;

      await expectPushed(
        [a, b],
        'the migration',
        async () => {
          const reply = await platform(app, 'POST', '/v1/cursors', {
            users: [{ user: 'migrated', feed: now - 1500, notices: 1, conversations: { c7: 3 } }],
          });
          expect(reply.status, reply.text).toBe(202);
          expect(JSON.parse(reply.text)).toEqual({ accepted: 1 });
        },
        countsOf,
        { feed: 1, notices: 1, conversations: { c7: 1 } },
        PUSH_DEADLINE_MS,
      );
      // The bystander follows the same author: whatever it was pushed since, its feed stayed.
      for (const badge of bystander.badges.slice(bystanderBefore)) expect(badge.feed).toBe(3);
      expectVersionsIncrease(a);
      expectVersionsIncrease(b);
    });
  });
}
