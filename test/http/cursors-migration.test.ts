/**
 * `POST /v1/cursors` over real HTTP (docs/api.md, "Platform API"): the platform's read
 * positions of its users, each moved forward only as a read moves it, then seen in the badge a
 * cold start computes. On the memory engine and on a real redis-server.
 */
import { CURSOR_MIGRATION_LIMITS } from '@bubble/protocol';
import { expect, it } from 'vitest';
import {
  app,
  client,
  describeOnEachEngine,
  expectError,
  parseJson,
  platform,
  platformBadge,
  tokenFor,
  type Badge,
} from './support.js';

interface Entry {
  user: string;
  feed?: number;
  notices?: number;
  conversations?: Record<string, number>;
}

async function migrate(users: Entry[] | unknown): Promise<number> {
  const reply = await platform(app, 'POST', '/v1/cursors', { body: { users } });
  expect(reply.status, reply.text).toBe(202);
  const body = parseJson(reply) as { accepted: number };
  expect(Object.keys(body)).toEqual(['accepted']);
  return body.accepted;
}

async function refused(body: unknown, code: string): Promise<void> {
  const reply = await platform(app, 'POST', '/v1/cursors', { body });
  expectError(reply, 400, code);
}

async function ok(reply: Promise<{ status: number; text: string }>, status = 204): Promise<void> {
  const answered = await reply;
  expect(answered.status, answered.text).toBe(status);
}

const counts = (badge: Badge) => ({
  feed: badge.feed,
  notices: badge.notices,
  conversations: badge.conversations,
});

/** A follows `author`, whose posts are 3, 2 and 1 s old; notices 1..5; c7 with 10 messages. */
async function sources(user: string): Promise<number> {
  const now = app.clock.now();
  await ok(platform(app, 'PUT', `/v1/users/${user}/follows/author`));
  await ok(
    platform(app, 'POST', '/v1/posts', {
      body: {
        posts: [3000, 2000, 1000].map((age) => ({
          author: 'author',
          id: `p${age}`,
          ts: now - age,
        })),
      },
    }),
    202,
  );
  for (let id = 1; id <= 5; id++)
    await ok(platform(app, 'POST', '/v1/notices', { body: { id } }), 202);
  await ok(
    platform(app, 'PUT', '/v1/conversations/c7/members', { body: { members: [user, 'peer'] } }),
  );
  const messages = Array.from({ length: 10 }, (_, i) => ({ seq: i + 1, from: 'peer' }));
  await ok(platform(app, 'POST', '/v1/conversations/c7/messages', { body: { messages } }), 202);
  return now;
}

describeOnEachEngine('POST /v1/cursors', 'cursors', () => {
  it('moves each cursor forward only; the cold start badge counts from the moved cursors', async () => {
    const now = await sources('u1');
    // A member joined before the messages; the user was never seen: no notice cursor yet.
    expect(counts(await platformBadge(app, 'u1'))).toEqual({
      feed: 3,
      notices: 0,
      conversations: { c7: 10 },
    });
    expect(
      await migrate([{ user: 'u1', feed: now - 2500, notices: 2, conversations: { c7: 4 } }]),
    ).toBe(1);
    expect(counts(await platformBadge(app, 'u1'))).toEqual({
      feed: 2,
      notices: 3,
      conversations: { c7: 6 },
    });

    // Backwards: nothing moves.
    expect(
      await migrate([{ user: 'u1', feed: now - 5000, notices: 1, conversations: { c7: 2 } }]),
    ).toBe(1);
    expect(counts(await platformBadge(app, 'u1'))).toEqual({
      feed: 2,
      notices: 3,
      conversations: { c7: 6 },
    });

    // Forward again, each kind alone.
    await migrate([{ user: 'u1', feed: now - 1500 }]);
    await migrate([{ user: 'u1', notices: 4 }]);
    await migrate([{ user: 'u1', conversations: { c7: 9 } }]);
    expect(counts(await platformBadge(app, 'u1'))).toEqual({
      feed: 1,
      notices: 1,
      conversations: { c7: 1 },
    });
    expect(await app.store.cursors.feedReadAt('u1')).toBe(now - 1500);
  });

  it('clamps the feed cursor to now and a seq to the conversation’s last, as a read does', async () => {
    const now = await sources('u1');
    await migrate([{ user: 'u1', feed: now + 3_600_000, conversations: { c7: 500 } }]);
    expect(await app.store.cursors.feedReadAt('u1')).toBe(now);
    expect(counts(await platformBadge(app, 'u1'))).toMatchObject({ feed: 0, conversations: {} });

    // The cursors stand at now and at seq 10: a later post and message count.
    app.clock.advance(1000);
    await ok(
      platform(app, 'POST', '/v1/posts', {
        body: { author: 'author', id: 'later', ts: now + 500 },
      }),
      202,
    );
    await ok(
      platform(app, 'POST', '/v1/conversations/c7/messages', { body: { seq: 11, from: 'peer' } }),
      202,
    );
    expect(counts(await platformBadge(app, 'u1'))).toMatchObject({
      feed: 1,
      conversations: { c7: 1 },
    });
  });

  it('ignores the conversation entries of a non-member; the user is still accepted', async () => {
    await sources('u1');
    await ok(platform(app, 'PUT', '/v1/conversations/c8/members', { body: { members: ['peer'] } }));
    expect(
      await migrate([
        { user: 'stranger', conversations: { c7: 3, c8: 1, nowhere: 2 } },
        { user: 'u1', conversations: { c8: 1, nowhere: 2 } },
      ]),
    ).toBe(2);
    expect(await app.store.conversations.memberships('stranger')).toEqual([]);
    expect(await app.store.conversations.members('nowhere')).toBeNull();
    expect((await platformBadge(app, 'stranger')).conversations).toEqual({});
    expect((await platformBadge(app, 'u1')).conversations).toEqual({ c7: 10 });
  });

  it('is no sight of the user: their first visit still starts the notice cursor', async () => {
    const now = await sources('u1');
    await migrate([{ user: 'u1', feed: now }]);
    expect((await app.store.marks.state('u1')).seen).toBeNull();
    await ok(platform(app, 'POST', '/v1/notices', { body: { id: 6 } }), 202);
    // Seen first now: the cursor starts at the highest id published so far, 6.
    const token = await tokenFor('u1');
    const reply = await client(app, token, 'GET', '/v1/badge');
    expect(reply.status).toBe(200);
    expect((parseJson(reply) as Badge).notices).toBe(0);
    // A migrated notice cursor, on the contrary, is kept at the first visit.
    await migrate([{ user: 'u2', notices: 4 }]);
    const second = await client(app, await tokenFor('u2'), 'GET', '/v1/badge');
    expect((parseJson(second) as Badge).notices).toBe(2);
  });

  it('applies a user named twice in turn, and counts an entry with nothing to move', async () => {
    await sources('u1');
    expect(
      await migrate([
        { user: 'u1', conversations: { c7: 8 } },
        { user: 'u1', conversations: { c7: 3 }, notices: 5 },
        { user: 'idle' },
        { user: 'idle', conversations: {} },
      ]),
    ).toBe(4);
    expect(counts(await platformBadge(app, 'u1'))).toMatchObject({
      notices: 0,
      conversations: { c7: 2 },
    });
  });

  it('takes 1000 users with ids of 64 characters in one call', async () => {
    const now = app.clock.now();
    const users = Array.from({ length: CURSOR_MIGRATION_LIMITS.users }, (_, i) => ({
      user: `${'u'.repeat(58)}-${String(i).padStart(5, '0')}`,
      feed: now - i,
      notices: Number.MAX_SAFE_INTEGER - i,
      conversations: Object.fromEntries(
        Array.from({ length: 10 }, (_, j) => [
          `${'c'.repeat(58)}-${String(i * 10 + j).padStart(5, '0')}`,
          Number.MAX_SAFE_INTEGER - j,
        ]),
      ),
    }));
    // Every bound at once, as compact JSON: under the 1 MiB body limit of every route.
    expect(JSON.stringify({ users }).length).toBeGreaterThan(900_000);
    const [first] = Object.keys(users.at(-1)!.conversations);
    const last = users.at(-1)!.user;
    await ok(
      platform(app, 'PUT', `/v1/conversations/${first}/members`, { body: { members: [last] } }),
    );
    const messages = [1, 2, 3].map((seq) => ({ seq, from: 'peer' }));
    await ok(
      platform(app, 'POST', `/v1/conversations/${first}/messages`, { body: { messages } }),
      202,
    );
    expect(await migrate(users)).toBe(1000);
    expect((await platformBadge(app, last)).conversations).toEqual({});
    expect(await app.store.conversations.memberships(last)).toMatchObject([{ readSeq: 3 }]);
    for (const i of [0, 499, 999]) {
      const { user } = users[i]!;
      expect(await app.store.cursors.feedReadAt(user)).toBe(now - i);
      expect((await app.store.marks.state(user)).seen).toBe(Number.MAX_SAFE_INTEGER - i);
    }
  });

  it('refuses a bad call whole, with the error code of the contract, and changes nothing', async () => {
    const now = await sources('u1');
    const good = { user: 'u1', feed: now, notices: 5, conversations: { c7: 10 } };
    const before = counts(await platformBadge(app, 'u1'));
    const tooMany = Array.from({ length: CURSOR_MIGRATION_LIMITS.users + 1 }, (_, i) => ({
      user: i === 0 ? 'u1' : `user${i}`,
      feed: now,
    }));
    await refused({ users: tooMany }, 'UB_ERR_BAD_REQUEST');
    await refused({ users: [good, { user: 'bad id' }] }, 'UB_ERR_BAD_ID');
    await refused(
      { users: [good, { user: 'u2', conversations: { 'bad id': 1 } }] },
      'UB_ERR_BAD_ID',
    );
    await refused({ users: [good, { user: 'x'.repeat(65) }] }, 'UB_ERR_BAD_ID');
    await refused({ users: [good, { user: 'u2', extra: 1 }] }, 'UB_ERR_BAD_REQUEST');
    await refused({ users: [good], more: true }, 'UB_ERR_BAD_REQUEST');
    await refused({ users: [] }, 'UB_ERR_BAD_REQUEST');
    await refused({}, 'UB_ERR_BAD_REQUEST');
    await refused([good], 'UB_ERR_BAD_REQUEST');
    for (const notices of [0, -1, 1.5, '3', Number.MAX_SAFE_INTEGER + 2]) {
      await refused({ users: [good, { user: 'u2', notices }] }, 'UB_ERR_BAD_REQUEST');
    }
    for (const feed of [-1, 1.5, null]) {
      await refused({ users: [good, { user: 'u2', feed }] }, 'UB_ERR_BAD_REQUEST');
    }
    for (const conversations of [{ c7: 0 }, { c7: '1' }, [], 'c7']) {
      await refused({ users: [good, { user: 'u2', conversations }] }, 'UB_ERR_BAD_REQUEST');
    }
    const perUser = Object.fromEntries(
      Array.from({ length: CURSOR_MIGRATION_LIMITS.conversationsPerUser + 1 }, (_, i) => [
        `c${i}`,
        1,
      ]),
    );
    await refused({ users: [good, { user: 'u2', conversations: perUser }] }, 'UB_ERR_BAD_REQUEST');
    const full = Object.fromEntries(
      Array.from({ length: CURSOR_MIGRATION_LIMITS.conversationsPerUser }, (_, i) => [`c${i}`, 1]),
    );
    const perCall =
      CURSOR_MIGRATION_LIMITS.conversationsPerCall / CURSOR_MIGRATION_LIMITS.conversationsPerUser;
    const overTotal = Array.from({ length: perCall }, (_, i) => ({
      user: `v${i}`,
      conversations: full,
    }));
    await refused({ users: [good, ...overTotal] }, 'UB_ERR_BAD_REQUEST');
    const malformed = await platform(app, 'POST', '/v1/cursors', { rawBody: '{"users":[' });
    expectError(malformed, 400, 'UB_ERR_BAD_REQUEST');
    const unauthenticated = await platform(app, 'POST', '/v1/cursors', {
      body: { users: [good] },
      headers: { 'x-api-key': 'wrong' },
    });
    expectError(unauthenticated, 401, 'UB_ERR_UNAUTHORIZED');

    expect(counts(await platformBadge(app, 'u1'))).toEqual(before);
    expect(await app.store.cursors.feedReadAt('u1')).toBeNull();
    expect((await app.store.marks.state('u1')).seen).toBeNull();
    // The call at the bound of conversations per call is taken.
    expect(await migrate(overTotal)).toBe(perCall);
  });
});
