/**
 * No call of user A reads, clears or mutes anything of user B (issue 19, "Tokens"): random pairs
 * of users who share a conversation, each with feed posts, notices, a red dot and conversations
 * of their own; user A makes random client calls over HTTP and over the socket (reads of every
 * scope, naming B's conversations too, mutes, lists, bodies that try to name B); afterwards B's
 * badge and B's conversation list are exactly what they were. One gateway per engine.
 */
import fc from 'fast-check';
import WebSocket from 'ws';
import { describe, expect, it } from 'vitest';
import { badgeState } from '../support/badges.js';
import { call } from '../support/http.js';
import { ENGINES, platform, platformBadge, tokenFor, useEngine, type LiveApp } from './support.js';

type Action =
  | { via: 'http' | 'socket'; read: Record<string, unknown> }
  | { via: 'http'; mute: string; muted: boolean }
  | { via: 'http'; list: true }
  | { via: 'http'; raw: { method: string; path: string; body?: unknown } };

/** Conversations by role, named per run: A's own, the one A and B share, B's, and none. */
const OWN = '@own';
const SHARED = '@shared';
const THEIRS = '@theirs';

function actions(): fc.Arbitrary<Action[]> {
  const conversation = fc.constantFrom(OWN, SHARED, THEIRS, 'nobody-has-this');
  const read = fc.oneof(
    fc.constant({ scope: 'feed' }),
    fc.constant({ scope: 'notices' }),
    fc.constant({ scope: 'all' }),
    fc.constant({ scope: 'reddot', name: 'iso-dot' }),
    conversation.map((id) => ({ scope: 'conversation', id })),
    fc.tuple(conversation, fc.integer({ min: 1, max: 9 })).map(([id, seq]) => ({
      scope: 'conversation',
      id,
      seq,
    })),
  );
  const action: fc.Arbitrary<Action> = fc.oneof(
    fc.record({ via: fc.constantFrom('http' as const, 'socket' as const), read }),
    fc.record({ via: fc.constant('http' as const), mute: conversation, muted: fc.boolean() }),
    fc.constant({ via: 'http' as const, list: true as const }),
    fc.constant<Action>({ via: 'http', raw: { method: 'GET', path: '/v1/badge?user=B' } }),
  );
  return fc.array(action, { minLength: 1, maxLength: 8 });
}

async function expectStatus(reply: Promise<{ status: number; text: string }>, statuses: number[]) {
  const done = await reply;
  expect(statuses, done.text).toContain(done.status);
}

/** What B has: the badge's counts and the conversation list as B's own app sees it. */
async function stateOf(app: LiveApp, user: string, token: string) {
  const badge = await platformBadge(app, user);
  const list = await call(app, 'GET', '/v1/conversations', { token });
  expect(list.status, list.text).toBe(200);
  return { ...badgeState(badge), list: JSON.parse(list.text) as unknown };
}

/** A read frame on a socket of A's, answered (a badge or an error) before it returns. */
async function socketRead(app: LiveApp, token: string, read: Record<string, unknown>) {
  const ws = new WebSocket(app.wsUrl, { headers: { authorization: `Bearer ${token}` } });
  const answers: string[] = [];
  let wake = () => {};
  ws.on('message', (data: WebSocket.RawData) => {
    const { type } = JSON.parse(String(data)) as { type: string };
    if (type === 'badge' || type === 'error') answers.push(type);
    wake();
  });
  const reached = (count: number) =>
    new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no answer to ${JSON.stringify(read)}`)),
        5000,
      );
      wake = () => {
        if (answers.length < count) return;
        clearTimeout(timer);
        resolve();
      };
      wake();
    });
  // The badge after authentication first, so the read's answer is the next frame.
  await reached(1);
  ws.send(JSON.stringify({ type: 'read', ...read }));
  await reached(2);
  ws.close();
}

let run = 0;

for (const engine of ENGINES) {
  describe(`user isolation [${engine}]`, () => {
    const engineApps = useEngine(engine);

    it('nothing user A calls changes anything of user B', async () => {
      const app = await engineApps.start({ core: false });
      const now = Date.now();
      await fc.assert(
        fc.asyncProperty(actions(), async (symbolic) => {
          // Every run (shrinking included) on users and conversations of its own.
          const n = ++run;
          const a = `iso-a-${n}`;
          const b = `iso-b-${n}`;
          const [own, shared, theirs] = [`iso-own-${n}`, `iso-shared-${n}`, `iso-theirs-${n}`];
          const named = (id: string) =>
            ({ [OWN]: own, [SHARED]: shared, [THEIRS]: theirs })[id] ?? id;
          const list = symbolic.map((action): Action => {
            if ('read' in action && typeof action.read.id === 'string') {
              return { ...action, read: { ...action.read, id: named(action.read.id) } };
            }
            if ('mute' in action) return { ...action, mute: named(action.mute) };
            return action;
          });
          const author = `iso-author-${n}`;
          const ok = (reply: Promise<{ status: number; text: string }>) =>
            expectStatus(reply, [202, 204]);
          for (const user of [a, b]) {
            await ok(platform(app, 'PUT', `/v1/users/${user}/follows/${author}`));
          }
          await ok(
            platform(app, 'POST', '/v1/posts', {
              posts: [1, 2, 3].map((i) => ({ author, id: `p${i}`, ts: now - i * 1000 })),
            }),
          );
          await ok(platform(app, 'PUT', '/v1/reddots/iso-dot', {}));
          await ok(
            platform(app, 'PUT', `/v1/conversations/${own}/members`, { members: [a, 'iso-o'] }),
          );
          await ok(
            platform(app, 'PUT', `/v1/conversations/${shared}/members`, { members: [a, b] }),
          );
          await ok(
            platform(app, 'PUT', `/v1/conversations/${theirs}/members`, { members: [b, 'iso-o'] }),
          );
          for (const [conversation, from] of [
            [own, 'iso-o'],
            [shared, a],
            [shared, 'iso-o'],
            [theirs, 'iso-o'],
          ] as const) {
            const messages = [1, 2, 3].map((seq) => ({ seq, from }));
            await ok(
              platform(app, 'POST', `/v1/conversations/${conversation}/messages`, { messages }),
            );
          }
          const tokenA = await tokenFor(a);
          const tokenB = await tokenFor(b);
          // B has been seen (their notice cursor set) before A does anything.
          await expectStatus(call(app, 'GET', '/v1/badge', { token: tokenB }), [200]);
          await ok(platform(app, 'POST', '/v1/notices', { id: n * 10 + 1 }));
          const before = await stateOf(app, b, tokenB);

          for (const action of list) {
            if ('read' in action) {
              if (action.via === 'socket') await socketRead(app, tokenA, action.read);
              else
                await expectStatus(
                  call(app, 'POST', '/v1/badge/read', { token: tokenA, body: action.read }),
                  [200, 403, 404],
                );
              // The same body naming B is refused whole.
              await expectStatus(
                call(app, 'POST', '/v1/badge/read', {
                  token: tokenA,
                  body: { ...action.read, user: b },
                }),
                [400],
              );
            } else if ('mute' in action) {
              const reply = call(app, 'PUT', `/v1/conversations/${action.mute}/mute`, {
                token: tokenA,
                body: { muted: action.muted },
              });
              await expectStatus(reply, action.mute === theirs ? [403] : [204, 403, 404]);
            } else if ('list' in action) {
              const reply = await call(app, 'GET', '/v1/conversations', { token: tokenA });
              expect(reply.status).toBe(200);
              const ids = (JSON.parse(reply.text) as { id: string }[]).map((item) => item.id);
              expect(ids).not.toContain(theirs);
            } else {
              const reply = await call(app, action.raw.method, action.raw.path, {
                token: tokenA,
              });
              if (reply.status === 200)
                expect((JSON.parse(reply.text) as { user: string }).user).toBe(a);
            }
          }
          expect(await stateOf(app, b, tokenB)).toEqual(before);
        }),
        { numRuns: engine === 'memory' ? 25 : 12 },
      );
    }, 120_000);
  });
}
