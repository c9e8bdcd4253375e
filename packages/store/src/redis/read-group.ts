import type { RedisClient } from './connect.js';

/** One stream entry as XREADGROUP returns it: its id and its fields, name, value, … (null: trimmed). */
export type StreamEntryReply = [string, string[] | null];

/**
 * XREADGROUP of the entries of `stream` never delivered to `group`, up to `count`, blocking up to
 * `blockMs`: the entries of the one stream read ([] when none came). Throws NOGROUP when the group
 * is gone.
 */
export async function readNewEntries(
  redis: RedisClient,
  stream: string,
  group: string,
  consumer: string,
  count: number,
  blockMs: number,
): Promise<StreamEntryReply[]> {
  const reply = (await redis.xreadgroup(
    'GROUP',
    group,
    consumer,
    'COUNT',
    count,
    'BLOCK',
    blockMs,
    'STREAMS',
    stream,
    '>',
  )) as [string, StreamEntryReply[]][] | null;
  return reply?.[0]?.[1] ?? [];
}
