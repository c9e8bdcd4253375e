import { BubbleError, assertId } from '@bubble/protocol';

/** Shared checks of the badges layer's inputs; each refuses with the contract's error code. */

export function assertPositiveId(value: unknown, what: string): void {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new BubbleError('UB_ERR_BAD_REQUEST', `${what} must be a positive safe integer`);
  }
}

/** De-duplicated, each one a valid id. */
export function uniqueIds(ids: readonly string[], what: string): string[] {
  const unique = [...new Set(ids)];
  for (const id of unique) assertId(id, what);
  return unique;
}

export function notMember(conversation: string): BubbleError {
  return new BubbleError(
    'UB_ERR_FORBIDDEN',
    `the caller is not a member of conversation ${conversation}`,
  );
}
