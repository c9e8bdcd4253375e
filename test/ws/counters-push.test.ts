/**
 * Live pushes of interaction counters (docs/semantics.md "Interaction counters", "Freshness"): a
 * user online on two devices gets a badge frame on both for an event, a batch, a retraction and
 * a read on the other device; a user who is not the event's gets nothing. The core learns of
 * each through the user's pool log (a `counters` event) and reloads that user's counters alone.
 * Real servers: an in-process gateway with a core and a scheduler, on memory and on a real
 * redis-server. No sleeps: every wait has a deadline.
 */
import { isDeepStrictEqual } from 'node:util';
import { describe, expect, it } from 'vitest';
import { ENGINES, platform, useEngine, type Badge } from './support.js';
import { connect, expectPushed, expectVersionsIncrease, ids, type Client } from './live-client.js';

const PUSH_DEADLINE_MS = 20_000;

const countsOf = (badge: Badge) => ({ counters: badge.counters ?? {}, total: badge.total });

for (const engine of ENGINES) {
  describe(`live pushes of interaction counters [${engine}]`, () => {
    const rig = useEngine(engine);

    it('an event, a batch, a retraction and a read on one device reach both devices', async () => {
      const app = await rig.start({ reconcilePerSweep: 0 });
      const [user, other] = ids('cnt', 2) as [string, string];
      const a = await connect(app, user, 'A');
      const b = await connect(app, user, 'B');
      const bystander = await connect(app, other, 'other');
      for (const s of [a, b]) expect(s.lastBadge).not.toHaveProperty('counters');

      const expectPush = async (
        sockets: Client[],
        what: string,
        change: () => Promise<unknown>,
        want: { counters: Record<string, number>; total: number },
      ) => {
        await expectPushed(sockets, what, change, countsOf, want, PUSH_DEADLINE_MS);
      };
      const post = async (body: unknown, accepted: number, ignored: number) => {
        const reply = await platform(app, 'POST', '/v1/counters', body);
        expect(reply.status, reply.text).toBe(202);
        expect(JSON.parse(reply.text)).toEqual({ accepted, ignored });
      };

      await expectPush([a, b], 'a mention', () => post({ user, kind: 'mention', id: 'm1' }, 1, 0), {
        counters: { mention: 1 },
        total: 1,
      });
      await expectPush(
        [a, b],
        'a batch with a repeat',
        () =>
          post(
            {
              events: [
                { user, kind: 'like', id: 'l1' },
                { user, kind: 'like', id: 'l2' },
                { user, kind: 'mention', id: 'm1' },
              ],
            },
            2,
            1,
          ),
        { counters: { like: 2, mention: 1 }, total: 3 },
      );
      await expectPush(
        [a, b],
        'an unlike',
        async () => {
          const reply = await platform(app, 'DELETE', `/v1/counters/${user}/like/l2`);
          expect(reply.status, reply.text).toBe(204);
        },
        { counters: { like: 1, mention: 1 }, total: 2 },
      );
      await expectPush(
        [b],
        'a read of the mentions on A',
        async () => {
          a.send({ type: 'read', scope: 'counter', kind: 'mention' });
        },
        { counters: { like: 1 }, total: 1 },
      );
      await a.waitBadge((badge) => isDeepStrictEqual(countsOf(badge), countsOf(b.lastBadge!)), {
        timeoutMs: PUSH_DEADLINE_MS,
        message: 'the read was not answered on A',
      });

      // A bad kind is refused whole and pushes nothing; the bystander never had a counter.
      const refused = await platform(app, 'POST', '/v1/counters', {
        events: [
          { user, kind: 'like', id: 'l3' },
          { user, kind: 'share', id: 's1' },
        ],
      });
      expect(refused.status).toBe(400);
      expect(JSON.parse(refused.text).error.code).toBe('UB_ERR_BAD_REQUEST');
      await expectPush([a, b], 'another like', () => post({ user, kind: 'like', id: 'l4' }, 1, 0), {
        counters: { like: 2 },
        total: 2,
      });
      for (const badge of bystander.badges) expect(badge).not.toHaveProperty('counters');
      expectVersionsIncrease(a);
      expectVersionsIncrease(b);
    });
  });
}
