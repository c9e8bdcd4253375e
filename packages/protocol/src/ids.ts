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

/**
 * A record keyed by ids: no prototype, so `__proto__`, `constructor` or `hasOwnProperty` are
 * ordinary keys (an id may be any of them). Every object whose keys are ids is made with this.
 */
export function idRecord<T>(): Record<string, T> {
  return Object.create(null) as Record<string, T>;
}

/** `record[key]` when the record has it as its own key (never an inherited property). */
export function ownValue<T>(record: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}
