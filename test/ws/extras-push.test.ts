/**
 * Live pushes of the sources beside the feed (docs/semantics.md "System notices",
 * "Red dots", "Conversations", "Freshness"): a user online on two devices gets a badge frame on
 * both for every kind of change — a notice published or withdrawn, a red dot marked or cleared,
 * a message in their conversation, a mute, being removed, a dissolution — and a read on one
 * device (notices, a conversation, a red dot) reaches the other. Versions only grow on each
 * connection. Real servers: an in-process gateway with a core and a scheduler, on memory and on
 * a real redis-server. No sleeps: every wait has a deadline.
 */
import { describe, expect, it } from 'vitest';
import { badgeState } from '../support/badges.js';
import {
  ENGINES,
  call,
  platform,
  platformBadge,
  tokenFor,
  useEngine,
  type Badge,
  type LiveApp,
} from './support.js';
import { connect, expectPushed, expectVersionsIncrease, ids, type Client } from './live-client.js';

const PUSH_DEADLINE_MS = 20_000;

interface State {
  notices: number;
  conversations: Record<string, number>;
  conversationsTotal: number;
  reddots: string[];
  total: number;
}

async function expectStatus(reply: Promise<{ status: number; text: string }>, status: number) {
  const done = await reply;
  expect(done.status, done.text).toBe(status);
}

/** On a socket that sends no reads, every badge has a greater version than the one before. */
function expectStrictlyIncreasing(client: Client): void {
  const versions = client.badges.map((b) => b.version);
  for (let i = 1; i < versions.length; i++) {
    expect(client.badges[i]!.epoch).toBe(client.badges[0]!.epoch);
    expect(versions[i], `${client.label}: versions ${JSON.stringify(versions)}`).toBeGreaterThan(
      versions[i - 1]!,
    );
  }
}

for (const engine of ENGINES) {
  describe(`live pushes of notices, red dots and conversations [${engine}]`, () => {
    const rig = useEngine(engine);

    /**
     * Runs `change`, then waits until every socket got a badge (after the ones it had) whose
     * counts are exactly `expected`; returns what reached the first socket.
     */
    async function expectPush(
      sockets: Client[],
      what: string,
      change: () => Promise<unknown>,
      expected: State,
    ): Promise<Badge> {
      const want = { feed: 0, ...expected, display: String(expected.total) };
      const got = await expectPushed(sockets, what, change, badgeState, want, PUSH_DEADLINE_MS);
      // Both devices hold the same badge (the same stamp for the same state).
      for (const badge of got.slice(1)) {
        expect({ ...badge, computedAt: 0 }).toEqual({ ...got[0]!, computedAt: 0 });
      }
      return got[0]!;
    }

    const ok = (app: LiveApp, method: string, path: string, status: number, body?: unknown) =>
      expectStatus(platform(app, method, path, body), status);

    it('every kind of change reaches both devices of a user, and a read on one reaches the other', async () => {
      // Reconciliation off: with two users held it would re-check both against the store every
      // sweep and repair any change the core failed to follow within a few sweeps, hiding it.
      // (It also counts false repairs when changes land in consecutive sweeps, as here.)
      const app = await rig.start({ reconcilePerSweep: 0 });
      const [user, peer, other] = ids('x', 3) as [string, string, string];
      const [c1, c2, c3] = ids('conv', 3) as [string, string, string];
      // c1 exists before the user comes online; c2 and c3 are joined while online
      await ok(app, 'PUT', `/v1/conversations/${c1}/members`, 204, { members: [user, peer] });
      // a notice published before the first sight never counts
      await ok(app, 'POST', '/v1/notices', 202, { id: 1 });

      const a = await connect(app, user, 'A');
      const b = await connect(app, user, 'B');
      const zero: State = {
        notices: 0,
        conversations: {},
        conversationsTotal: 0,
        reddots: [],
        total: 0,
      };
      for (const s of [a, b]) expect(badgeState(s.lastBadge!)).toMatchObject(zero);
      // a second online user who is in none of the conversations
      const bystander = await connect(app, other, 'other');
      const both = [a, b];

      let state: State = zero;
      const step = async (what: string, change: () => Promise<unknown>, next: Partial<State>) => {
        state = { ...state, ...next };
        return expectPush(both, what, change, state);
      };

      // ---- notices
      await step('a notice published', () => ok(app, 'POST', '/v1/notices', 202, { id: 2 }), {
        notices: 1,
        total: 1,
      });
      await step('another notice', () => ok(app, 'POST', '/v1/notices', 202, { id: 3 }), {
        notices: 2,
        total: 2,
      });
      await step('a notice withdrawn', () => ok(app, 'DELETE', '/v1/notices/3', 204), {
        notices: 1,
        total: 1,
      });

      // ---- red dots
      await step('a red dot marked', () => ok(app, 'PUT', '/v1/reddots/settings', 204), {
        reddots: ['settings'],
      });
      await step('another red dot marked', () => ok(app, 'PUT', '/v1/reddots/wallet', 204), {
        reddots: ['settings', 'wallet'],
      });
      await step('a red dot cleared', () => ok(app, 'DELETE', '/v1/reddots/wallet', 204), {
        reddots: ['settings'],
      });

      // ---- messages (the peer's own messages never count for the peer, only for the user)
      const send = (conversation: string, seq: number, from = peer) =>
        ok(app, 'POST', `/v1/conversations/${conversation}/messages`, 202, { seq, from });
      await step('a message', () => send(c1, 1), {
        conversations: { [c1]: 1 },
        conversationsTotal: 1,
        total: 2,
      });
      await step(
        'a batch of messages',
        () =>
          ok(app, 'POST', `/v1/conversations/${c1}/messages`, 202, {
            messages: [2, 3, 4].map((seq) => ({ seq, from: peer })),
          }),
        { conversations: { [c1]: 4 }, conversationsTotal: 4, total: 5 },
      );
      // the user's own message (from a third device, through the platform) reads up to it
      await step('the user sent a message', () => send(c1, 5, user), {
        conversations: {},
        conversationsTotal: 0,
        total: 1,
      });
      await step(
        'joined a conversation while online, then a message in it',
        async () => {
          await ok(app, 'POST', `/v1/conversations/${c2}/members`, 204, { members: [user, peer] });
          await send(c2, 7);
        },
        { conversations: { [c2]: 7 }, conversationsTotal: 7, total: 8 },
      );
      await step(
        'messages in both',
        async () => {
          await send(c1, 6);
          await send(c1, 7);
        },
        { conversations: { [c1]: 2, [c2]: 7 }, conversationsTotal: 9, total: 10 },
      );

      // ---- reads on device A, pushed to device B (and answered on A)
      await step(
        'a notices read on A',
        async () => {
          a.send({ type: 'read', scope: 'notices' });
        },
        { notices: 0, total: 9 },
      );
      await step(
        'a conversation read on A with a seq',
        async () => {
          a.send({ type: 'read', scope: 'conversation', id: c2, seq: 4 });
        },
        { conversations: { [c1]: 2, [c2]: 3 }, conversationsTotal: 5, total: 5 },
      );
      await step(
        'a red dot read on A',
        async () => {
          a.send({ type: 'read', scope: 'reddot', name: 'settings' });
        },
        { reddots: [] },
      );
      // and a read over HTTP (no socket of the user involved) reaches both sockets
      const token = await tokenFor(user);
      await step(
        'a conversation read over HTTP',
        async () => {
          const reply = await call(app, 'POST', '/v1/badge/read', {
            body: { scope: 'conversation', id: c1 },
            headers: { authorization: `Bearer ${token}` },
          });
          expect(reply.status, reply.text).toBe(200);
          expect((JSON.parse(reply.text) as Badge).conversations).toEqual({ [c2]: 3 });
        },
        { conversations: { [c2]: 3 }, conversationsTotal: 3, total: 3 },
      );

      // ---- mute: the count stays, the total leaves it out
      const mute = (conversation: string, muted: boolean) =>
        expectStatus(
          call(app, 'PUT', `/v1/conversations/${conversation}/mute`, {
            body: { muted },
            headers: { authorization: `Bearer ${token}` },
          }),
          204,
        );
      await step('a mute', () => mute(c2, true), { conversationsTotal: 0, total: 0 });
      await step('a message in the muted conversation', () => send(c2, 9), {
        conversations: { [c2]: 5 },
        total: 0,
      });
      await step('an unmute', () => mute(c2, false), { conversationsTotal: 5, total: 5 });
      await step('a mute again', () => mute(c2, true), { conversationsTotal: 0, total: 0 });

      // ---- leaving and dissolution
      await step('a message in c1', () => send(c1, 8), {
        conversations: { [c1]: 1, [c2]: 5 },
        conversationsTotal: 1,
        total: 1,
      });
      await step(
        'removed from a conversation',
        async () => {
          await ok(app, 'DELETE', `/v1/conversations/${c2}/members/${user}`, 204);
        },
        { conversations: { [c1]: 1 }, conversationsTotal: 1, total: 1 },
      );
      // a message in a conversation the user left reaches nobody of theirs; a joined one does
      await step(
        'joined c3 and a message there, none in the c2 left',
        async () => {
          await send(c2, 10);
          await ok(app, 'PUT', `/v1/conversations/${c3}/members`, 204, { members: [user, peer] });
          await send(c3, 2);
        },
        { conversations: { [c1]: 1, [c3]: 2 }, conversationsTotal: 3, total: 3 },
      );
      await step('a dissolution', () => ok(app, 'DELETE', `/v1/conversations/${c1}`, 204), {
        conversations: { [c3]: 2 },
        conversationsTotal: 2,
        total: 2,
      });
      await step('another dissolution', () => ok(app, 'DELETE', `/v1/conversations/${c3}`, 204), {
        conversations: {},
        conversationsTotal: 0,
        total: 0,
      });

      // What both devices hold last is what the store serves.
      const stored = await platformBadge(app, user);
      expect(badgeState(stored)).toEqual(badgeState(a.lastBadge!));
      expect({ epoch: stored.epoch, version: stored.version }).toEqual({
        epoch: b.lastBadge!.epoch,
        version: b.lastBadge!.version,
      });

      // The bystander saw the notices and red dots, never a conversation.
      expect(bystander.badges.some((x) => x.notices === 1)).toBe(true);
      expect(bystander.badges.some((x) => x.reddots.includes('wallet'))).toBe(true);
      expect(bystander.badges.every((x) => Object.keys(x.conversations).length === 0)).toBe(true);
      expect(badgeState(bystander.lastBadge!)).toMatchObject({ notices: 1, reddots: ['settings'] });

      // Versions: B, which sent nothing, saw them strictly increase; A may see a read's answer
      // repeat a version at most once per read it sent.
      expectStrictlyIncreasing(b);
      expectStrictlyIncreasing(bystander);
      expectVersionsIncrease(a);
      for (const s of [a, b, bystander]) {
        expect(s.frames.filter((f) => f.type === 'error')).toEqual([]);
        expect(s.malformed).toEqual([]);
        expect(s.closed).toBeNull();
      }
      expect(app.logs.filter((l) => l.level >= 50)).toEqual([]);
    });
  });
}
