import type { z } from 'zod';
import { BubbleError } from '../errors.js';
import { ID_PATTERN } from '../ids.js';
import { describeIssues, fieldIssues } from './describe-issues.js';
import { issueMessage } from './issue-message.js';

/** `schema.safeParse` with the messages of issueMessage: what every input is checked with. */
export function checkInput<T extends z.ZodType>(
  schema: T,
  input: unknown,
): z.ZodSafeParseResult<z.output<T>> {
  return schema.safeParse(input, { error: issueMessage });
}

/**
 * The input as the schema reads it, or a BubbleError naming each field and the rule it broke:
 * UB_ERR_BAD_ID when every issue is a string breaking the id grammar (wherever it appears,
 * docs/semantics.md), UB_ERR_BAD_REQUEST otherwise. `context` leads the message (`op post: `).
 */
export function parseInput<T extends z.ZodType>(
  schema: T,
  input: unknown,
  context = '',
): z.output<T> {
  const parsed = checkInput(schema, input);
  if (parsed.success) return parsed.data;
  throw validationError(parsed.error, context);
}

export function validationError(error: z.ZodError, context = ''): BubbleError {
  const issues = fieldIssues(error.issues);
  const code =
    issues.length > 0 && issues.every((one) => isBadIdIssue(one.issue))
      ? 'UB_ERR_BAD_ID'
      : 'UB_ERR_BAD_REQUEST';
  return new BubbleError(code, `${context}${describeIssues(error)}`, { cause: error });
}

const ID_PATTERN_SOURCE = String(ID_PATTERN);

/** A string that breaks the id grammar (idSchema's pattern). */
function isBadIdIssue(issue: z.core.$ZodIssue): boolean {
  return (
    issue.code === 'invalid_format' && 'pattern' in issue && issue.pattern === ID_PATTERN_SOURCE
  );
}
