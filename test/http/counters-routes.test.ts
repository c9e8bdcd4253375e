/**
 * Interaction counters over real HTTP (api.md "Platform API" POST/DELETE /v1/counters, the
 * `counter` read scope, the badge's `counters`): every route's status and body, its
 * authentication, its refusals (which change nothing), and the badge and explanation after
 * each change. One in-process gateway per test, on the memory engine and on a real redis-server.
 */
import { expect, it } from 'vitest';
import {
  call,
  client,
  expectError,
  parseJson,
  platform,
  platformBadge,
  tokenFor,
  app,
  describeOnEachEngine,
  type Badge,
} from './support.js';

describeOnEachEngine('interaction counters over HTTP', 'counters', () => {
  const post = (body: unknown) => platform(app, 'POST', '/v1/counters', { body });

  it('POST /v1/counters answers 202 {accepted, ignored}; the badge lists the counters and adds them to total', async () => {
    const one = await post({ user: 'u1', kind: 'mention', id: 'm1' });
    expect(one.status, one.text).toBe(202);
    expect(parseJson(one)).toEqual({ accepted: 1, ignored: 0 });
    const batch = await post({
      events: [
        { user: 'u1', kind: 'mention', id: 'm1' },
        { user: 'u1', kind: 'like', id: 'l1' },
        { user: 'u2', kind: 'comment', id: 'c1' },
      ],
    });
    expect(parseJson(batch)).toEqual({ accepted: 2, ignored: 1 });
    const badge = await platformBadge(app, 'u1');
    expect(badge).toMatchObject({ counters: { like: 1, mention: 1 }, total: 2, display: '2' });
    expect(Object.keys(badge.counters!)).toEqual(['like', 'mention']);
    expect(await platformBadge(app, 'u3')).not.toHaveProperty('counters');
    const explained = parseJson(await platform(app, 'GET', '/v1/users/u1/badge/explain')) as {
      counters: unknown;
      total: number;
    };
    expect(explained.counters).toEqual({
      kinds: { mention: 1, comment: 0, like: 1 },
      contribution: 2,
    });
    expect(explained.total).toBe(2);
  });

  it('DELETE /v1/counters/{user}/{kind}/{id} is 204, also for an unknown event, and a retried ingest stays retracted', async () => {
    await post({ user: 'u1', kind: 'like', id: 'l1' });
    const gone = await platform(app, 'DELETE', '/v1/counters/u1/like/l1');
    expect(gone.status).toBe(204);
    expect(gone.text).toBe('');
    expect((await platform(app, 'DELETE', '/v1/counters/u1/like/never')).status).toBe(204);
    expect(parseJson(await post({ user: 'u1', kind: 'like', id: 'l1' }))).toEqual({
      accepted: 0,
      ignored: 1,
    });
    expect(await platformBadge(app, 'u1')).not.toHaveProperty('counters');
  });

  it('refuses another kind (400 UB_ERR_BAD_REQUEST), a bad id (400 UB_ERR_BAD_ID), a bad body, a big batch and no key; nothing is stored', async () => {
    const refusals: Array<[unknown, string]> = [
      [{ user: 'u1', kind: 'share', id: 's1' }, 'UB_ERR_BAD_REQUEST'],
      [
        {
          events: [
            { user: 'u1', kind: 'like', id: 'l1' },
            { user: 'u1', kind: 'share', id: 's1' },
          ],
        },
        'UB_ERR_BAD_REQUEST',
      ],
      [{ user: 'u 1', kind: 'like', id: 'l1' }, 'UB_ERR_BAD_ID'],
      [{ user: 'u1', kind: 'like', id: 'x/y' }, 'UB_ERR_BAD_ID'],
      [{ user: 'u1', kind: 'like' }, 'UB_ERR_BAD_REQUEST'],
      [{ user: 'u1', kind: 'like', id: 'l1', extra: 1 }, 'UB_ERR_BAD_REQUEST'],
      [{ events: [] }, 'UB_ERR_BAD_REQUEST'],
      [
        {
          events: Array.from({ length: 1001 }, (_, i) => ({
            user: 'u1',
            kind: 'like',
            id: `${i}`,
          })),
        },
        'UB_ERR_BAD_REQUEST',
      ],
    ];
    for (const [body, code] of refusals) expectError(await post(body), 400, code);
    expectError(
      await platform(app, 'DELETE', '/v1/counters/u1/share/s1'),
      400,
      'UB_ERR_BAD_REQUEST',
    );
    const unauthenticated = await call(app, 'POST', '/v1/counters', {
      body: { user: 'u1', kind: 'like', id: 'l1' },
    });
    expectError(unauthenticated, 401, 'UB_ERR_UNAUTHORIZED');
    expect(await platformBadge(app, 'u1')).not.toHaveProperty('counters');
  });

  it('the counter read scope: with upTo the computedAt of the badge shown, without, another kind 400, and scope all', async () => {
    const token = await tokenFor('u1');
    await post({
      events: [
        { user: 'u1', kind: 'mention', id: 'm1' },
        { user: 'u1', kind: 'like', id: 'l1' },
      ],
    });
    const shown = parseJson(await client(app, token, 'GET', '/v1/badge')) as Badge;
    expect(shown.counters).toEqual({ like: 1, mention: 1 });
    await post({ user: 'u1', kind: 'mention', id: 'm2' });
    const read = async (body: unknown) => {
      const reply = await client(app, token, 'POST', '/v1/badge/read', { body });
      expect(reply.status, reply.text).toBe(200);
      return parseJson(reply) as Badge;
    };
    expect(
      (await read({ scope: 'counter', kind: 'mention', upTo: shown.computedAt })).counters,
    ).toEqual({ like: 1, mention: 1 });
    expect((await read({ scope: 'counter', kind: 'mention' })).counters).toEqual({ like: 1 });
    expectError(
      await client(app, token, 'POST', '/v1/badge/read', {
        body: { scope: 'counter', kind: 'share' },
      }),
      400,
      'UB_ERR_BAD_REQUEST',
    );
    expectError(
      await client(app, token, 'POST', '/v1/badge/read', { body: { scope: 'counter' } }),
      400,
      'UB_ERR_BAD_REQUEST',
    );
    const all = await read({ scope: 'all' });
    expect(all).not.toHaveProperty('counters');
    expect(all.total).toBe(0);
  });
});
