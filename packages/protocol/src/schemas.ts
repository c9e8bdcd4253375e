import { z } from 'zod';
import { ID_PATTERN } from './ids.js';

/** Limits every request body is held to. */
export const LIMITS = {
  maxBodyBytes: 1024 * 1024,
  maxPostsPerBatch: 1000,
} as const;

export const idSchema = z
  .string()
  .regex(ID_PATTERN, 'must be 1 to 64 characters of [A-Za-z0-9_.:@-]');

const epochMs = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);

export const postSchema = z.strictObject({
  author: idSchema,
  id: idSchema,
  ts: epochMs,
});
export type PostInput = z.infer<typeof postSchema>;

export const postBatchSchema = z.union([
  postSchema,
  z.strictObject({ posts: z.array(postSchema).min(1).max(LIMITS.maxPostsPerBatch) }),
]);

export const replaceFollowsSchema = z.strictObject({
  authors: z.array(idSchema).max(100_000),
});

/** Presence from platforms that hold their own long connections. */
export const presenceSchema = z.strictObject({
  user: idSchema,
  online: z.boolean(),
  ttlMs: z.number().int().min(1000).max(86_400_000).optional(),
});
export const DEFAULT_PRESENCE_TTL_MS = 60_000;

export const readRequestSchema = z.discriminatedUnion('scope', [
  z.strictObject({ scope: z.literal('feed'), upTo: epochMs.optional() }),
  z.strictObject({ scope: z.literal('all') }),
]);
export type ReadRequest = z.infer<typeof readRequestSchema>;

/** Turns a zod failure into one line a person can act on. */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : 'body'}: ${issue.message}`)
    .join('; ');
}
