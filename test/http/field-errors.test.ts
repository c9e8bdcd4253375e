/**
 * A refused body names the field and the rule it broke (docs/api.md, "Errors"), and a batch of
 * posts is refused with the same code and message over HTTP as by the badge service itself.
 */
import { BubbleError } from '@bubble/protocol';
import { describe, expect, it } from 'vitest';
import {
  client,
  expectError,
  platform,
  tokenFor,
  app,
  useFreshApp,
  type Reply,
} from './support.js';

const ID_RULE = 'must be 1 to 64 characters of [A-Za-z0-9_.:@-]';

function errorOf(reply: Reply): { code: string; message: string } {
  return (JSON.parse(reply.text) as { error: { code: string; message: string } }).error;
}

async function serviceError(
  run: () => Promise<unknown>,
): Promise<{ code: string; message: string }> {
  try {
    await run();
  } catch (err) {
    if (err instanceof BubbleError) return { code: err.code, message: err.message };
    throw err;
  }
  throw new Error('accepted');
}

describe('errors that name the field [memory]', () => {
  useFreshApp('memory', 'field-errors');

  it.each<[string, unknown, number, string, string]>([
    ['a post without ts', { author: 'bob', id: 'p1' }, 400, 'UB_ERR_BAD_REQUEST', 'ts: required'],
    [
      'the fourth post of a batch without ts',
      {
        posts: [
          { author: 'bob', id: 'p0', ts: 1 },
          { author: 'bob', id: 'p1', ts: 1 },
          { author: 'bob', id: 'p2', ts: 1 },
          { author: 'bob', id: 'p3' },
        ],
      },
      400,
      'UB_ERR_BAD_REQUEST',
      'posts[3].ts: required',
    ],
    [
      'a ts of -1',
      { author: 'bob', id: 'p1', ts: -1 },
      400,
      'UB_ERR_BAD_REQUEST',
      'ts: must be a non-negative integer of ms',
    ],
    [
      'an author breaking the id grammar',
      { author: 'b b', id: 'p1', ts: 1 },
      400,
      'UB_ERR_BAD_ID',
      `author: ${ID_RULE}`,
    ],
    [
      'an unknown field',
      { author: 'bob', id: 'p1', ts: 1, tags: [] },
      400,
      'UB_ERR_BAD_REQUEST',
      'tags: unknown field',
    ],
  ])('POST /v1/posts: %s', async (_name, body, status, code, message) => {
    const reply = await platform(app, 'POST', '/v1/posts', { body });
    expectError(reply, status, code);
    expect(errorOf(reply)).toEqual({ code, message });
  });

  it('a batch is refused with the same code and message over HTTP and by the badge service', async () => {
    const now = app.clock.now();
    const batches: unknown[][] = [
      [
        { author: 'bob', id: 'p0', ts: now },
        { author: 'bob', id: 'p1' },
      ],
      [
        { author: 'bob', id: 'p0', ts: now },
        { author: 'b b', id: 'p1', ts: now },
      ],
      [{ author: 'bob', id: 'p0', ts: 1.5 }],
      [
        { author: 'bob', id: 'p0', ts: now },
        { author: 'bob', id: 'late', ts: now + 3_600_000 },
      ],
    ];
    for (const posts of batches) {
      const reply = await platform(app, 'POST', '/v1/posts', { body: { posts } });
      const direct = await serviceError(() => app.service.ingestPosts(posts as never));
      expect(errorOf(reply), JSON.stringify(posts)).toEqual(direct);
    }
    expect(
      errorOf(await platform(app, 'POST', '/v1/posts', { body: { posts: batches[3] } })),
    ).toEqual({
      code: 'UB_ERR_FUTURE_TS',
      message: `ts: must be at most 60 s after now (${now}); post bob/late has ${now + 3_600_000}`,
    });
  });

  it('POST /v1/badge/read: a missing field of the scope sent', async () => {
    const token = await tokenFor('u1');
    const reply = await client(app, token, 'POST', '/v1/badge/read', {
      body: { scope: 'conversation' },
    });
    expectError(reply, 400, 'UB_ERR_BAD_REQUEST');
    expect(errorOf(reply).message).toBe('id: required');
  });
});
