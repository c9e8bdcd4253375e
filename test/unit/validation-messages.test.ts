/**
 * Validation errors name the field and the rule it broke (docs/api.md, "Errors"): unions report
 * the branch the input was meant for, missing fields read `required`, array items `posts[3]`,
 * unknown keys one by one; the code is UB_ERR_BAD_ID only when every issue is the id grammar.
 */
import {
  BubbleError,
  LIMITS,
  counterBatchSchema,
  describeIssues,
  formatPath,
  isWellFormedPost,
  messageBatchSchema,
  parseInput,
  postBatchSchema,
  postSchema,
  readRequestSchema,
  validatePostBatch,
} from '@bubble/protocol';
import fc from 'fast-check';
import { z } from 'zod';
import { describe, expect, it } from 'vitest';

const ID_RULE = 'must be 1 to 64 characters of [A-Za-z0-9_.:@-]';
const TS_RULE = 'must be a non-negative integer of ms';

function refusal(run: () => unknown): { code: string; message: string } {
  try {
    run();
  } catch (err) {
    if (err instanceof BubbleError) return { code: err.code, message: err.message };
    throw err;
  }
  throw new Error('accepted');
}

const post = (i: number) => ({ author: 'bob', id: `p${i}`, ts: 1000 + i });

describe('describeIssues through parseInput', () => {
  it.each<[string, z.ZodType, unknown, string, string]>([
    [
      'a missing field in a one-or-many union',
      postBatchSchema,
      { author: 'bob', id: 'p1' },
      'UB_ERR_BAD_REQUEST',
      'ts: required',
    ],
    [
      'a missing field deep in a batch',
      postBatchSchema,
      { posts: [post(0), post(1), post(2), { author: 'bob', id: 'p3' }] },
      'UB_ERR_BAD_REQUEST',
      'posts[3].ts: required',
    ],
    [
      'a negative ts',
      postBatchSchema,
      { author: 'bob', id: 'p1', ts: -1 },
      'UB_ERR_BAD_REQUEST',
      `ts: ${TS_RULE}`,
    ],
    [
      'a ts as text',
      postBatchSchema,
      { author: 'bob', id: 'p1', ts: '1' },
      'UB_ERR_BAD_REQUEST',
      `ts: ${TS_RULE}`,
    ],
    [
      'the id grammar alone is UB_ERR_BAD_ID',
      postBatchSchema,
      { author: 'b b', id: 'p1', ts: 1 },
      'UB_ERR_BAD_ID',
      `author: ${ID_RULE}`,
    ],
    [
      'a bad id inside a nested array',
      postBatchSchema,
      { posts: [post(0), { ...post(1), topics: ['cats', 'no cats'] }] },
      'UB_ERR_BAD_ID',
      `posts[1].topics[1]: ${ID_RULE}`,
    ],
    [
      'a bad id beside another rule is UB_ERR_BAD_REQUEST',
      postBatchSchema,
      { author: 'b b', id: 'p1' },
      'UB_ERR_BAD_REQUEST',
      `author: ${ID_RULE}; ts: required`,
    ],
    [
      'an unknown key of the one-post shape',
      postBatchSchema,
      { ...post(0), extra: 1 },
      'UB_ERR_BAD_REQUEST',
      'extra: unknown field',
    ],
    [
      'an unknown key inside a batch',
      postBatchSchema,
      { posts: [{ ...post(0), x: 1 }] },
      'UB_ERR_BAD_REQUEST',
      'posts[0].x: unknown field',
    ],
    [
      'posts of the wrong type',
      postBatchSchema,
      { posts: 'x' },
      'UB_ERR_BAD_REQUEST',
      'posts: must be an array, not a string',
    ],
    [
      'an empty batch',
      postBatchSchema,
      { posts: [] },
      'UB_ERR_BAD_REQUEST',
      'posts: must have at least 1 item',
    ],
    [
      'too many topics',
      postBatchSchema,
      {
        ...post(0),
        topics: Array.from({ length: LIMITS.maxTopicsPerPost + 1 }, (_, i) => `t${i}`),
      },
      'UB_ERR_BAD_REQUEST',
      `topics: must have at most ${LIMITS.maxTopicsPerPost} items`,
    ],
    [
      'an array body',
      postBatchSchema,
      [post(0)],
      'UB_ERR_BAD_REQUEST',
      'body: must be an object, not an array',
    ],
    [
      'a null body',
      postBatchSchema,
      null,
      'UB_ERR_BAD_REQUEST',
      'body: must be an object, not null',
    ],
    [
      'a counter event missing its id',
      counterBatchSchema,
      { events: [{ user: 'u', kind: 'like' }] },
      'UB_ERR_BAD_REQUEST',
      'events[0].id: required',
    ],
    [
      'a message seq of 0',
      messageBatchSchema,
      { seq: 0, from: 'a' },
      'UB_ERR_BAD_REQUEST',
      'seq: must be a positive safe integer',
    ],
    [
      'an unknown discriminator',
      readRequestSchema,
      { scope: 'nope' },
      'UB_ERR_BAD_REQUEST',
      'scope: must be one of "feed", "notices", "conversation", "reddot", "counter", "all"',
    ],
    [
      'a missing discriminator',
      readRequestSchema,
      {},
      'UB_ERR_BAD_REQUEST',
      'scope: required, must be one of "feed", "notices", "conversation", "reddot", "counter", "all"',
    ],
    [
      'a field missing in the branch chosen',
      readRequestSchema,
      { scope: 'conversation' },
      'UB_ERR_BAD_REQUEST',
      'id: required',
    ],
    [
      'a bad id in a read',
      readRequestSchema,
      { scope: 'conversation', id: 'c 7' },
      'UB_ERR_BAD_ID',
      `id: ${ID_RULE}`,
    ],
  ])('%s', (_name, schema, input, code, message) => {
    expect(refusal(() => parseInput(schema, input))).toEqual({ code, message });
  });

  it('never answers zod\'s "Invalid input" for a union', () => {
    fc.assert(
      fc.property(fc.anything(), (input) => {
        for (const schema of [
          postBatchSchema,
          counterBatchSchema,
          messageBatchSchema,
          readRequestSchema,
        ]) {
          const parsed = schema.safeParse(input);
          if (parsed.success) continue;
          expect(refusal(() => parseInput(schema, input)).message).not.toMatch(/Invalid input/);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('shows five issues and counts the rest', () => {
    const message = refusal(() =>
      parseInput(postBatchSchema, {
        posts: Array.from({ length: 7 }, (_, i) => ({ author: 'bob', id: `p${i}` })),
      }),
    ).message;
    expect(message).toBe(
      'posts[0].ts: required; posts[1].ts: required; posts[2].ts: required; posts[3].ts: required; posts[4].ts: required; and 2 more',
    );
  });

  it('puts a context before the fields', () => {
    expect(
      refusal(() => parseInput(postSchema, { author: 'bob', id: 'p' }, 'op post: ')).message,
    ).toBe('op post: ts: required');
  });

  it('formats paths: dots, indices, quoted keys that are not names, body for none', () => {
    expect(formatPath([])).toBe('body');
    expect(formatPath(['posts', 3, 'ts'])).toBe('posts[3].ts');
    expect(formatPath([0, 'a'])).toBe('[0].a');
    expect(formatPath(['preview', 'a b'])).toBe('preview["a b"]');
  });

  it('describes an error parsed without the messages (zod defaults, unions still descended)', () => {
    const parsed = postBatchSchema.safeParse({ posts: [post(0), { author: 'bob', id: 'p' }] });
    expect(parsed.success).toBe(false);
    expect(describeIssues(parsed.error!)).toMatch(/^posts\[1\]\.ts: /);
  });
});

describe('validatePostBatch: one definition of a valid batch of posts', () => {
  const now = 1_800_000_000_000;

  it('names the field and the post the same way as the HTTP body does', () => {
    const batch = [post(0), { author: 'bob', id: 'p1' }] as unknown as Parameters<
      typeof validatePostBatch
    >[0];
    expect(refusal(() => validatePostBatch(batch, now))).toEqual(
      refusal(() => parseInput(postBatchSchema, { posts: batch })),
    );
    expect(refusal(() => validatePostBatch([{ author: 'a', id: 'p', ts: -1 }], now))).toEqual({
      code: 'UB_ERR_BAD_REQUEST',
      message: `posts[0].ts: ${TS_RULE}`,
    });
    expect(refusal(() => validatePostBatch([{ author: 'a a', id: 'p', ts: 1 }], now))).toEqual({
      code: 'UB_ERR_BAD_ID',
      message: `posts[0].author: ${ID_RULE}`,
    });
  });

  it('refuses a ts more than 60 s ahead with UB_ERR_FUTURE_TS, naming the field and the post', () => {
    expect(() =>
      validatePostBatch([{ author: 'a', id: 'p', ts: now + 60_000 }], now),
    ).not.toThrow();
    expect(
      refusal(() => validatePostBatch([post(0), { author: 'a', id: 'f', ts: now + 60_001 }], now)),
    ).toEqual({
      code: 'UB_ERR_FUTURE_TS',
      message: `ts: must be at most 60 s after now (${now}); post a/f has ${now + 60_001}`,
    });
  });

  it('its fast path says yes only to what postSchema accepts', () => {
    const idLike = fc.oneof(
      fc.stringMatching(/^[A-Za-z0-9_.:@-]{1,64}$/),
      fc.constantFrom('', 'a b', 'x'.repeat(65), 7, null),
    );
    const candidate = fc.oneof(
      fc.record(
        {
          author: idLike,
          id: idLike,
          ts: fc.oneof(fc.integer({ min: 0 }), fc.constantFrom(-1, 1.5, 2 ** 60, '1')),
          topics: fc.oneof(fc.array(idLike, { maxLength: 12 }), fc.constant('t')),
          extra: fc.integer(),
        },
        { requiredKeys: [] },
      ),
      fc.anything(),
    );
    fc.assert(
      fc.property(candidate, (value) => {
        expect(isWellFormedPost(value)).toBe(postSchema.safeParse(value).success);
      }),
      { numRuns: 2000 },
    );
  });
});
