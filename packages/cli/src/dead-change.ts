import { isStreamId, replayDeadLetter } from '@bubble/store';
import { printable } from './remote.js';
import {
  PAGE,
  partitionsOf,
  UsageError,
  type ChangeOptions,
  type Context,
} from './dead-context.js';

/** `bubble dead replay` and `bubble dead drop`: every id checked before anything changes. */

const MAX_IDS = 10_000;

export async function replay(
  context: Context,
  ids: string[],
  options: ChangeOptions,
): Promise<void> {
  if (options.webhook) throw new UsageError('offline-delivery dead letters cannot be replayed');
  const targets = await resolveTargets(context, ids, options);
  let replayed = 0;
  for (const [partition, list] of targets) {
    for (let start = 0; start < list.length; start += PAGE) {
      const batch = list.slice(start, start + PAGE);
      const results = await Promise.all(
        batch.map((id) => replayDeadLetter(context.redis, context.keys, partition, id)),
      );
      results.forEach((result, i) => {
        if (result.outcome === 'gone') {
          context.out(`partition ${partition}: ${batch[i]} was no longer a dead letter, skipped`);
        } else if (result.outcome === 'empty') {
          context.out(`partition ${partition}: ${batch[i]} has no fields to append, left dead`);
        } else {
          replayed++;
          if (!options.all) {
            context.out(
              `partition ${partition}: ${batch[i]} replayed as ingest entry ${result.entry}`,
            );
          }
        }
      });
    }
  }
  context.out(
    `replayed ${replayed} dead ${replayed === 1 ? 'letter' : 'letters'} to the ingest stream`,
  );
}

export async function drop(context: Context, ids: string[], options: ChangeOptions): Promise<void> {
  if (options.webhook) {
    if (options.partition !== undefined) throw new UsageError('--webhook has no partitions');
    const key = context.keys.webhookDead();
    const list = await existingIds(context, key, ids, options.all === true);
    const dropped = await deleteIds(context, key, list);
    context.out(`dropped ${dropped} offline-delivery dead ${dropped === 1 ? 'letter' : 'letters'}`);
    return;
  }
  const targets = await resolveTargets(context, ids, options);
  let dropped = 0;
  for (const [partition, list] of targets) {
    const n = await deleteIds(context, context.keys.ingestDead(partition), list);
    dropped += n;
    if (!options.all && n > 0) context.out(`partition ${partition}: dropped ${list.join(' ')}`);
  }
  context.out(`dropped ${dropped} dead ${dropped === 1 ? 'letter' : 'letters'}`);
}

/**
 * The dead letters a replay or drop acts on, per partition, all checked before anything is
 * changed. --all takes those present now (a letter that dies again while it runs is left).
 */
async function resolveTargets(
  context: Context,
  ids: string[],
  options: ChangeOptions,
): Promise<Map<number, string[]>> {
  const partitions = partitionsOf(context, options.partition);
  const targets = new Map<number, string[]>();
  if (options.all) {
    if (ids.length > 0) throw new UsageError('give dead-letter ids or --all, not both');
    for (const partition of partitions) {
      const list = await existingIds(context, context.keys.ingestDead(partition), [], true);
      if (list.length > 0) targets.set(partition, list);
    }
    return targets;
  }
  const wanted = checkIds(ids);
  const missing = new Set(wanted);
  for (const partition of partitions) {
    const key = context.keys.ingestDead(partition);
    const found = await Promise.all(wanted.map((id) => context.redis.xrange(key, id, id)));
    const here = wanted.filter((_, i) => found[i]!.length > 0);
    for (const id of here) missing.delete(id);
    if (here.length > 0) targets.set(partition, here);
  }
  if (missing.size > 0) {
    const where =
      partitions.length === 1
        ? `partition ${partitions[0]}`
        : `any of ${partitions.length} partitions`;
    throw new UsageError(
      `not a dead letter in ${where}: ${[...missing].join(' ')} (nothing was changed; see bubble dead list)`,
    );
  }
  return targets;
}

/** Ids of `key` to act on: the given ones, all checked to exist, or (all) every one present now. */
async function existingIds(
  context: Context,
  key: string,
  ids: string[],
  all: boolean,
): Promise<string[]> {
  if (all) {
    if (ids.length > 0) throw new UsageError('give dead-letter ids or --all, not both');
    const last = await context.redis.xrevrange(key, '+', '-', 'COUNT', 1);
    if (last.length === 0) return [];
    const end = last[0]![0];
    const found: string[] = [];
    let start = '-';
    for (;;) {
      const page = await context.redis.xrange(key, start, end, 'COUNT', PAGE);
      for (const [id] of page) found.push(id);
      if (page.length < PAGE) return found;
      start = `(${page[page.length - 1]![0]}`;
    }
  }
  const wanted = checkIds(ids);
  const found = await Promise.all(wanted.map((id) => context.redis.xrange(key, id, id)));
  const missing = wanted.filter((_, i) => found[i]!.length === 0);
  if (missing.length > 0) {
    throw new UsageError(
      `not a dead letter: ${missing.join(' ')} (nothing was changed; see bubble dead list --webhook)`,
    );
  }
  return wanted;
}

async function deleteIds(context: Context, key: string, ids: string[]): Promise<number> {
  let deleted = 0;
  for (let start = 0; start < ids.length; start += PAGE) {
    deleted += await context.redis.xdel(key, ...ids.slice(start, start + PAGE));
  }
  return deleted;
}

function checkIds(ids: string[]): string[] {
  if (ids.length === 0) throw new UsageError('give dead-letter ids, or --all');
  if (ids.length > MAX_IDS) throw new UsageError(`at most ${MAX_IDS} ids at a time (or --all)`);
  const bad = ids.filter((id) => !isStreamId(id));
  if (bad.length > 0) {
    throw new UsageError(
      `not a stream id (<ms>-<seq>, as bubble dead list shows): ${bad.map((id) => JSON.stringify(printable(id, 40))).join(' ')}`,
    );
  }
  return [...new Set(ids)];
}
