import type { RedisClient, RedisKeys } from '@bubble/store';

/** What `bubble dead`'s subcommands share: their connection, the key layout, the output. */

export const PAGE = 500;

export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export interface ListOptions {
  partition?: number;
  limit: number;
  json?: boolean;
  webhook?: boolean;
}

export interface ChangeOptions {
  partition?: number;
  all?: boolean;
  webhook?: boolean;
}

export interface Context {
  redis: RedisClient;
  keys: RedisKeys;
  partitions: number;
  out: (line: string) => void;
}

/** The partitions a command covers: --partition, else all of them. */
export function partitionsOf(context: Context, partition: number | undefined): number[] {
  if (partition === undefined) return Array.from({ length: context.partitions }, (_, i) => i);
  if (partition >= context.partitions) {
    throw new UsageError(
      `--partition ${partition} is out of range: BUBBLE_INGEST_PARTITIONS is ${context.partitions} (0 to ${context.partitions - 1})`,
    );
  }
  return [partition];
}
