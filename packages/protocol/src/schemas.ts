import { z } from 'zod';
import { ID_PATTERN } from './ids.js';

/** Limits every request body is held to. */
export const LIMITS = {
  maxBodyBytes: 1024 * 1024,
  /** Arrays and objects nested in one JSON body (a frame, an entry, an answer), at most. */
  maxJsonDepth: 32,
  maxPostsPerBatch: 1000,
  /** Topics one post may carry. */
  maxTopicsPerPost: 10,
  maxMessagesPerBatch: 1000,
  maxCounterEventsPerBatch: 1000,
  /** Members named in one membership call. */
  maxMembersPerCall: 100_000,
  /** A message preview, as JSON text. */
  maxPreviewBytes: 1024,
  maxConversationList: 100,
} as const;

export const idSchema = z
  .string()
  .regex(ID_PATTERN, 'must be 1 to 64 characters of [A-Za-z0-9_.:@-]');

/** A schema-level message for every failure but a missing value (issueMessage's `required`). */
function unlessMissing(message: string) {
  return (issue: { input?: unknown }): string | undefined =>
    issue.input === undefined ? undefined : message;
}

const EPOCH_MS_RULE = 'must be a non-negative integer of ms';
/** A time in ms since the epoch, as every body takes one (a read's `upTo`, a post's `ts`). */
export const epochMs = z
  .number({ error: unlessMissing(EPOCH_MS_RULE) })
  .int(EPOCH_MS_RULE)
  .nonnegative(EPOCH_MS_RULE)
  .max(Number.MAX_SAFE_INTEGER, EPOCH_MS_RULE);

export const postSchema = z.strictObject({
  author: idSchema,
  id: idSchema,
  ts: epochMs,
  topics: z.array(idSchema).max(LIMITS.maxTopicsPerPost).optional(),
});
export type PostInput = z.infer<typeof postSchema>;

export const postBatchSchema = z.union([
  postSchema,
  z.strictObject({ posts: z.array(postSchema).min(1).max(LIMITS.maxPostsPerBatch) }),
]);

export const replaceFollowsSchema = z.strictObject({
  authors: z.array(idSchema).max(100_000),
});

export const replaceTopicsSchema = z.strictObject({
  topics: z.array(idSchema).max(100_000),
});

/** One interaction event (docs/semantics.md); its kind is checked against BUBBLE_COUNTER_KINDS. */
export const counterEventSchema = z.strictObject({ user: idSchema, kind: idSchema, id: idSchema });

export const counterBatchSchema = z.union([
  counterEventSchema,
  z.strictObject({
    events: z.array(counterEventSchema).min(1).max(LIMITS.maxCounterEventsPerBatch),
  }),
]);

/** Presence from platforms that hold their own long connections. */
export const presenceSchema = z.strictObject({
  user: idSchema,
  online: z.boolean(),
  ttlMs: z.number().int().min(1000).max(86_400_000).optional(),
});
export const DEFAULT_PRESENCE_TTL_MS = 60_000;

/** Notice ids and conversation seqs: positive safe integers (docs/semantics.md). */
const POSITIVE_ID_RULE = 'must be a positive safe integer';
export const positiveIdSchema = z
  .number({ error: unlessMissing(POSITIVE_ID_RULE) })
  .int(POSITIVE_ID_RULE)
  .positive(POSITIVE_ID_RULE)
  .max(Number.MAX_SAFE_INTEGER, POSITIVE_ID_RULE);

export const readRequestSchema = z.discriminatedUnion('scope', [
  z.strictObject({ scope: z.literal('feed'), upTo: epochMs.optional() }),
  z.strictObject({ scope: z.literal('notices'), upTo: positiveIdSchema.optional() }),
  z.strictObject({
    scope: z.literal('conversation'),
    id: idSchema,
    seq: positiveIdSchema.optional(),
  }),
  z.strictObject({ scope: z.literal('reddot'), name: idSchema }),
  z.strictObject({ scope: z.literal('counter'), kind: idSchema, upTo: epochMs.optional() }),
  z.strictObject({ scope: z.literal('all') }),
]);
export type ReadRequest = z.infer<typeof readRequestSchema>;

export const noticeSchema = z.strictObject({ id: positiveIdSchema, ts: epochMs.optional() });

export const reddotMarkSchema = z.strictObject({ ts: epochMs.optional() });

export const membersSchema = z.strictObject({
  members: z.array(idSchema).max(LIMITS.maxMembersPerCall),
});

/** A JSON object of at most maxPreviewBytes, passed through untouched. */
const previewSchema = z
  .record(z.string(), z.unknown())
  .refine((value) => utf8Length(JSON.stringify(value)) <= LIMITS.maxPreviewBytes, {
    message: `must be a JSON object of at most ${LIMITS.maxPreviewBytes} bytes`,
  });

export const messageSchema = z.strictObject({
  seq: positiveIdSchema,
  from: idSchema,
  ts: epochMs.optional(),
  preview: previewSchema.optional(),
});
export type MessageInput = z.infer<typeof messageSchema>;

export const messageBatchSchema = z.union([
  messageSchema,
  z.strictObject({ messages: z.array(messageSchema).min(1).max(LIMITS.maxMessagesPerBatch) }),
]);

export const muteSchema = z.strictObject({ muted: z.boolean() });

const encoder = new TextEncoder();
function utf8Length(text: string): number {
  return encoder.encode(text).length;
}
