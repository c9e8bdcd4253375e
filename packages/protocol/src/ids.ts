import { BubbleError } from './errors.js';

/** Users, authors, posts, conversations and red dots share one id grammar. */
export const ID_PATTERN = /^[A-Za-z0-9_.:@-]{1,64}$/;

export function isValidId(value: unknown): value is string {
  return typeof value === 'string' && ID_PATTERN.test(value);
}

export function assertId(value: unknown, what: string): string {
  if (!isValidId(value)) {
    throw new BubbleError(
      'UB_ERR_BAD_ID',
      `${what} must be 1 to 64 characters of [A-Za-z0-9_.:@-]`,
    );
  }
  return value;
}
