import { z } from 'zod';
import { BubbleError } from '../errors.js';
import { ID_PATTERN } from '../ids.js';
import { LIMITS, postSchema, type PostInput } from '../schemas.js';
import { MAX_FUTURE_SKEW_MS } from '../time.js';
import { parseInput } from './validate.js';

/** A post as callers hold it (the store's Post, the schema's PostInput). */
export interface PostFields {
  readonly author: string;
  readonly id: string;
  readonly ts: number;
  readonly topics?: readonly string[] | undefined;
}

/** Posts as the badge service takes them: any number, each as postSchema says. */
const postListSchema = z.strictObject({ posts: z.array(postSchema) });

/**
 * The one definition of a valid batch of posts, for every path (HTTP, the ingest stream, the
 * badge service): each post as postSchema says (UB_ERR_BAD_ID / UB_ERR_BAD_REQUEST, naming
 * `posts[i].field`), then the rule a schema cannot hold, the clock: a ts more than 60 s after
 * `now` refuses the batch with UB_ERR_FUTURE_TS.
 */
export function validatePostBatch(posts: readonly PostFields[], now: number): void {
  if (!allOf(posts, isWellFormedPost)) parseInput(postListSchema, { posts });
  for (const post of posts) {
    if (post.ts > now + MAX_FUTURE_SKEW_MS) {
      throw new BubbleError(
        'UB_ERR_FUTURE_TS',
        `ts: must be at most 60 s after now (${now}); post ${post.author}/${post.id} has ${post.ts}`,
      );
    }
  }
}

/**
 * What postSchema accepts, without the schema's cost (most posts are well formed). It may say
 * no to a post the schema would take (the schema then decides), never yes to one it refuses.
 */
export function isWellFormedPost(value: unknown): value is PostInput {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const post = value as Record<string, unknown>;
  // for…in over own keys allocates nothing (Object.keys would, once a post).
  for (const key in post) {
    if (!Object.hasOwn(post, key)) continue;
    if (key !== 'author' && key !== 'id' && key !== 'ts' && key !== 'topics') return false;
  }
  const { author, id, ts, topics } = post;
  return (
    isId(author) &&
    isId(id) &&
    typeof ts === 'number' &&
    Number.isSafeInteger(ts) &&
    ts >= 0 &&
    (topics === undefined ||
      (Array.isArray(topics) && topics.length <= LIMITS.maxTopicsPerPost && allOf(topics, isId)))
  );
}

function isId(value: unknown): boolean {
  return typeof value === 'string' && ID_PATTERN.test(value);
}

/** `every` that also checks the holes of a sparse array (the schema reads them as undefined). */
function allOf(values: readonly unknown[], test: (value: unknown) => boolean): boolean {
  for (let i = 0; i < values.length; i += 1) if (!test(values[i])) return false;
  return true;
}
