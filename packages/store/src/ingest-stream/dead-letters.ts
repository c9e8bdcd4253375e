import type { RedisClient } from '../redis/connect.js';
import type { RedisKeys } from '../redis/keys.js';
import { ScriptStatus } from '../redis/script-status.js';
import { scripts } from '../redis/scripts.js';

/**
 * Fields the ingest consumer adds to an entry it dead-letters (deadLetterIngest-2.lua); every
 * other field of a dead letter is the platform's entry.
 */
export const DEAD_LETTER_FIELDS: ReadonlySet<string> = new Set(['entry', 'error', 'deliveries']);

export type ReplayOutcome =
  | { outcome: 'replayed'; entry: string }
  /** It was no longer a dead letter (replayed or dropped meanwhile). */
  | { outcome: 'gone' }
  /** It has no field of the platform's to append: it stays dead. */
  | { outcome: 'empty' };

/**
 * Moves one dead letter of `partition` back to its ingest stream, atomically and only while it
 * is still dead (replayDeadLetter-2.lua).
 */
export async function replayDeadLetter(
  redis: RedisClient,
  keys: RedisKeys,
  partition: number,
  id: string,
): Promise<ReplayOutcome> {
  const entry = await scripts(redis).replayDeadLetter(
    [keys.ingestDead(partition), keys.ingest(partition)],
    [id],
  );
  if (entry === null) return { outcome: 'gone' };
  if (entry === ScriptStatus.Unchanged) return { outcome: 'empty' };
  return { outcome: 'replayed', entry };
}
