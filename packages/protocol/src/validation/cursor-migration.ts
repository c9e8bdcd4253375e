import { z } from 'zod';
import { ID_PATTERN } from '../ids.js';
import { epochMs, idSchema, positiveIdSchema } from '../schemas.js';
import { checkInput } from './validate.js';

/** The bounds of one `POST /v1/cursors` call (docs/api.md, "Limits"). */
export const CURSOR_MIGRATION_LIMITS = {
  users: 1000,
  conversationsPerUser: 1000,
  /**
   * Conversation cursors in one call, over all its users: a call at every bound, with ids of 64
   * characters, is still under the 1 MiB body limit as compact JSON.
   */
  conversationsPerCall: 10_000,
} as const;

const ID_RULE = 'must be 1 to 64 characters of [A-Za-z0-9_.:@-]';
const CONVERSATIONS_RULE = 'must be an object of conversation id → seq';

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Conversation id → seq. Not a z.record: that one drops a `__proto__` key (a valid id) and
 * reports a bad key as a plain bad request; here a bad key is UB_ERR_BAD_ID like any id.
 */
const conversationCursorsSchema = z
  .custom<Record<string, number>>(isObject, { error: CONVERSATIONS_RULE })
  .superRefine((cursors, ctx) => {
    const ids = Object.keys(cursors);
    if (ids.length > CURSOR_MIGRATION_LIMITS.conversationsPerUser) {
      ctx.addIssue({
        code: 'custom',
        message: `must have at most ${CURSOR_MIGRATION_LIMITS.conversationsPerUser} conversations`,
      });
      return;
    }
    for (const id of ids) {
      if (!ID_PATTERN.test(id)) {
        ctx.addIssue({
          code: 'invalid_format',
          format: 'regex',
          pattern: String(ID_PATTERN),
          input: id,
          path: [id],
          message: `conversation id ${ID_RULE}`,
        });
      }
      const value = cursors[id];
      if (typeof value === 'number' && Number.isSafeInteger(value) && value > 0) continue;
      const seq = checkInput(positiveIdSchema, value);
      if (!seq.success) {
        for (const issue of seq.error.issues) ctx.addIssue({ ...issue, path: [id, ...issue.path] });
      }
    }
  });

/** One user's positions on the platform, each moved forward only (docs/api.md). */
export const userCursorsSchema = z.strictObject({
  user: idSchema,
  /** The feed read cursor (ms), clamped to now as a read's `upTo` is. */
  feed: epochMs.optional(),
  /** The last notice id the user has seen. */
  notices: positiveIdSchema.optional(),
  /** Conversation id → the member's read seq, clamped to the conversation's last seq. */
  conversations: conversationCursorsSchema.optional(),
});
export type UserCursors = z.output<typeof userCursorsSchema>;

/** The body of `POST /v1/cursors` and of the ingest stream's `cursors` op. */
export const cursorMigrationSchema = z
  .strictObject({
    users: z.array(userCursorsSchema).min(1).max(CURSOR_MIGRATION_LIMITS.users),
  })
  .superRefine(({ users }, ctx) => {
    let total = 0;
    for (const { conversations } of users) {
      if (conversations) total += Object.keys(conversations).length;
    }
    if (total > CURSOR_MIGRATION_LIMITS.conversationsPerCall) {
      ctx.addIssue({
        code: 'custom',
        path: ['users'],
        message: `must have at most ${CURSOR_MIGRATION_LIMITS.conversationsPerCall} conversation cursors in all (${total} given)`,
      });
    }
  });
export type CursorMigrationBody = z.output<typeof cursorMigrationSchema>;
