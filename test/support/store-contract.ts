/** What the BubbleStore contract's files (test/contract/store-contract-*.test.ts) share. */
import { BubbleError, DAY_MS, mulberry32, poolOf, type ErrorCode } from '@bubble/protocol';
import { LOG_START, type BubbleStore, type PoolEvent, type PostEvent } from '@bubble/store';
import { expect } from 'vitest';

/** The feed lookback the tests assume (7 days). */
export const L = 7 * DAY_MS;

export async function codeOf(promise: Promise<unknown>): Promise<ErrorCode | 'resolved' | 'other'> {
  try {
    await promise;
    return 'resolved';
  } catch (error) {
    return error instanceof BubbleError ? error.code : 'other';
  }
}

export async function expectBubbleError(
  promise: Promise<unknown>,
  code: ErrorCode,
  status?: number,
): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error, `expected ${code}`).toBeInstanceOf(BubbleError);
  expect((error as BubbleError).code).toBe(code);
  if (status !== undefined) expect((error as BubbleError).status).toBe(status);
}

/** An integer in [0, n) from the shared seeded random (mulberry32, @bubble/protocol). */
export function seededRandom(seed: number): (n: number) => number {
  const random = mulberry32(seed);
  return (n) => Math.floor(random() * n);
}

export const sorted = (values: readonly string[]): string[] => [...values].sort();

/** Every stored post of `author` regardless of ts (the store has no list call; count them). */
export function countAll(store: BubbleStore, authors: readonly string[]): Promise<number> {
  return store.posts.countBetween(authors, -1, Number.MAX_SAFE_INTEGER);
}

/** Every event of the post change log, oldest first. */
export async function postEvents(store: BubbleStore): Promise<PostEvent[]> {
  const read = await store.changes.readPostEvents(LOG_START, 1000);
  return read.entries.map((entry) => entry.event);
}

/** Every event of the change log of `user`'s pool (whoever they are about), oldest first. */
export async function poolEvents(store: BubbleStore, user: string): Promise<PoolEvent[]> {
  const pool = poolOf(user, store.pools);
  const read = (await store.changes.readPoolEvents([{ pool, after: LOG_START }], 1000)).get(pool);
  return read!.entries.map((entry) => entry.event);
}

/** Every event of every pool's change log. */
export async function allPoolEvents(store: BubbleStore): Promise<PoolEvent[]> {
  const cursors = Array.from({ length: store.pools }, (_, pool) => ({ pool, after: LOG_START }));
  const reads = await store.changes.readPoolEvents(cursors, 1000);
  return [...reads.values()].flatMap((read) => read.entries.map((entry) => entry.event));
}
