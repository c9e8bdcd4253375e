import { connectRedis, RedisKeys, type RedisClient } from '@bubble/store';
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { loadConfig } from './config.js';
import { printable } from './remote.js';
import { table } from './status-command.js';
import { hasRedis } from './store-factory.js';

/**
 * `bubble dead list|replay|drop`: the dead letters of the ingest stream (`<prefix>:ingest:dead{i}`,
 * the entry's fields plus `entry`, `error`, `deliveries`) and, with --webhook, of offline
 * delivery (`<prefix>:webhook:dead`), read and changed in Redis directly. A bad argument (an id
 * that is malformed or not a dead letter, a partition out of range) changes nothing and exits 2.
 */

/** Fields the consumer adds to a dead letter; every other field is the platform's entry. */
const DEAD_LETTER_FIELDS = new Set(['entry', 'error', 'deliveries']);
const STREAM_ID = /^\d{1,20}-\d{1,20}$/;
const MAX_IDS = 10_000;
const MAX_LIMIT = 100_000;
const PAGE = 500;
const BODY_COLUMN = 60;
const ERROR_COLUMN = 60;
const USAGE_EXIT = 2;
const CONNECT_TIMEOUT_MS = 10_000;

/**
 * Moves one dead letter back to its partition's ingest stream in one step (both keys share the
 * partition's hash tag), only while it is still dead: two operators replaying it at once append
 * it once. Returns the new entry's id, null when it was no longer there, 0 when it has no field
 * of the platform's to append (it stays dead).
 */
const REPLAY_SCRIPT = `
local found = redis.call('XRANGE', KEYS[1], ARGV[1], ARGV[1])
if #found == 0 then return false end
local fields = found[1][2]
local kept = {}
for i = 1, #fields, 2 do
  local name = fields[i]
  if name ~= 'entry' and name ~= 'error' and name ~= 'deliveries' then
    kept[#kept + 1] = name
    kept[#kept + 1] = fields[i + 1]
  end
end
if #kept == 0 then return 0 end
local id = redis.call('XADD', KEYS[2], '*', unpack(kept))
redis.call('XDEL', KEYS[1], ARGV[1])
return id
`;

class UsageError extends Error {
  override readonly name = 'UsageError';
}

export interface DeadLetter {
  partition: number;
  /** Its id in the dead-letter stream: what replay and drop take. */
  id: string;
  /** The id it had in the ingest stream. */
  entry: string | null;
  v: string | null;
  op: string | null;
  body: string | null;
  error: string | null;
  deliveries: number | null;
  /** Fields beyond those, as the platform wrote them. */
  other?: Record<string, string>;
}

export interface WebhookDeadLetter {
  id: string;
  fields: Record<string, string>;
}

interface ListOptions {
  partition?: number;
  limit: number;
  json?: boolean;
  webhook?: boolean;
}

interface ChangeOptions {
  partition?: number;
  all?: boolean;
  webhook?: boolean;
}

/** Adds `bubble dead` and its subcommands to the program. */
export function addDeadCommand(program: Command): void {
  const dead = program
    .command('dead')
    .description('dead letters of the ingest stream (and of offline delivery, with --webhook)')
    .showHelpAfterError();
  // Usage errors of commander itself (unknown flag, bad --limit) exit 2 as ours do.
  const usageExit = (err: CommanderError) => {
    process.exit(err.exitCode === 0 ? 0 : USAGE_EXIT);
  };
  dead.exitOverride(usageExit);

  dead
    .command('list')
    .description('show the dead letters of every partition (or one), oldest first')
    .option('--partition <i>', 'only this partition', partitionOption)
    .option('--limit <n>', 'show at most n', countOption(1, MAX_LIMIT), 100)
    .option('--json', 'print them as JSON, bodies whole')
    .option('--webhook', 'the offline-delivery dead letters instead')
    .exitOverride(usageExit)
    .action((options: ListOptions) => run((context) => list(context, options)));

  dead
    .command('replay')
    .description("append dead letters back to their partition's ingest stream, then remove them")
    .argument('[id...]', 'dead-letter ids, as `bubble dead list` shows them')
    .option('--all', 'every dead letter (of --partition, or of every partition)')
    .option('--partition <i>', 'only this partition', partitionOption)
    .exitOverride(usageExit)
    .action((ids: string[], options: ChangeOptions) =>
      run((context) => replay(context, ids, options)),
    );

  dead
    .command('drop')
    .description('remove dead letters for good')
    .argument('[id...]', 'dead-letter ids, as `bubble dead list` shows them')
    .option('--all', 'every dead letter (of --partition, or of every partition)')
    .option('--partition <i>', 'only this partition', partitionOption)
    .option('--webhook', 'the offline-delivery dead letters instead')
    .exitOverride(usageExit)
    .action((ids: string[], options: ChangeOptions) =>
      run((context) => drop(context, ids, options)),
    );
}

interface Context {
  redis: RedisClient;
  keys: RedisKeys;
  partitions: number;
  out: (line: string) => void;
}

async function run(command: (context: Context) => Promise<void>): Promise<void> {
  let redis: RedisClient | undefined;
  try {
    const config = loadConfig();
    if (!hasRedis(config))
      throw new UsageError('bubble dead needs REDIS_URL or REDIS_CLUSTER_NODES');
    let lastError = '';
    redis = connectRedis(
      { url: config.REDIS_URL, clusterNodes: config.REDIS_CLUSTER_NODES },
      'bubble-dead',
      (err) => (lastError = err.message),
    );
    await ready(redis, () => lastError);
    await command({
      redis,
      keys: new RedisKeys(config.BUBBLE_KEY_PREFIX, config.BUBBLE_POOLS),
      partitions: config.BUBBLE_INGEST_PARTITIONS,
      out: (line) => process.stdout.write(`${line}\n`),
    });
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`bubble dead: ${err.message}\n`);
    process.exitCode = USAGE_EXIT;
  } finally {
    redis?.disconnect();
  }
}

/**
 * Resolves once the client can send commands. A Redis that never answers (or a cluster whose
 * nodes cannot be reached) would otherwise queue the commands for ever.
 */
function ready(redis: RedisClient, lastError: () => string): Promise<void> {
  if (redis.status === 'ready') return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      redis.off('ready', onReady);
      const why = lastError();
      reject(
        new Error(
          `Redis was not ready within ${CONNECT_TIMEOUT_MS / 1000} s (REDIS_URL or REDIS_CLUSTER_NODES)${why ? `: ${why}` : ''}`,
        ),
      );
    }, CONNECT_TIMEOUT_MS);
    const onReady = () => {
      clearTimeout(timer);
      resolve();
    };
    redis.once('ready', onReady);
  });
}

/** The partitions a command covers: --partition, else all of them. */
function partitionsOf(context: Context, partition: number | undefined): number[] {
  if (partition === undefined) return Array.from({ length: context.partitions }, (_, i) => i);
  if (partition >= context.partitions) {
    throw new UsageError(
      `--partition ${partition} is out of range: BUBBLE_INGEST_PARTITIONS is ${context.partitions} (0 to ${context.partitions - 1})`,
    );
  }
  return [partition];
}

// ---------------------------------------------------------------------------------- list

async function list(context: Context, options: ListOptions): Promise<void> {
  if (options.webhook) {
    if (options.partition !== undefined) throw new UsageError('--webhook has no partitions');
    return listWebhook(context, options);
  }
  const partitions = partitionsOf(context, options.partition);
  const counts = await Promise.all(
    partitions.map((p) => context.redis.xlen(context.keys.ingestDead(p))),
  );
  const pages = await Promise.all(
    partitions.map((p) =>
      context.redis.xrange(context.keys.ingestDead(p), '-', '+', 'COUNT', options.limit),
    ),
  );
  const letters = pages
    .flatMap((page, i) => page.map(([id, fields]) => deadLetter(partitions[i]!, id, fields)))
    .sort((a, b) => compareIds(a.id, b.id) || a.partition - b.partition)
    .slice(0, options.limit);
  const total = counts.reduce((sum, n) => sum + n, 0);

  if (options.json) {
    context.out(
      JSON.stringify({
        partitions: partitions.map((partition, i) => ({ partition, deadLetters: counts[i] })),
        total,
        deadLetters: letters,
      }),
    );
    return;
  }
  const where =
    partitions.length === 1 ? `partition ${partitions[0]}` : `${partitions.length} partitions`;
  if (total === 0) {
    context.out(`no dead letters (${where})`);
    return;
  }
  context.out(
    `${total} dead ${total === 1 ? 'letter' : 'letters'} (${where}${
      partitions.length > 1 ? `: ${counts.map((n, i) => `${partitions[i]}=${n}`).join(' ')}` : ''
    })${letters.length < total ? `, the oldest ${letters.length} shown` : ''}`,
  );
  context.out('');
  context.out(
    table(
      ['PARTITION', 'ID', 'ENTRY', 'OP', 'DELIVERIES', 'ERROR', 'BODY'],
      letters.map((l) => [
        String(l.partition),
        l.id,
        l.entry ?? '-',
        l.op === null ? '-' : printable(l.op, 24),
        l.deliveries === null ? '-' : String(l.deliveries),
        l.error === null ? '-' : printable(l.error, ERROR_COLUMN),
        l.body === null ? '-' : printable(l.body, BODY_COLUMN),
      ]),
      new Set([0, 4]),
      '',
    ).join('\n'),
  );
}

async function listWebhook(context: Context, options: ListOptions): Promise<void> {
  const key = context.keys.webhookDead();
  const [total, page] = await Promise.all([
    context.redis.xlen(key),
    context.redis.xrange(key, '-', '+', 'COUNT', options.limit),
  ]);
  const letters: WebhookDeadLetter[] = page.map(([id, fields]) => ({ id, fields: pairs(fields) }));
  if (options.json) {
    context.out(JSON.stringify({ total, deadLetters: letters }));
    return;
  }
  if (total === 0) {
    context.out('no offline-delivery dead letters');
    return;
  }
  context.out(
    `${total} offline-delivery dead ${total === 1 ? 'letter' : 'letters'}${
      letters.length < total ? `, the oldest ${letters.length} shown` : ''
    }`,
  );
  context.out('');
  // The delivery's own columns first; whatever else it carries (its body) after, cut short.
  const shown = ['id', 'status', 'attempts', 'error'];
  const cell = (value: string | undefined, max: number) =>
    value === undefined || value === '' ? '-' : printable(value, max);
  context.out(
    table(
      ['ID', 'DELIVERY', 'STATUS', 'ATTEMPTS', 'ERROR', 'REST'],
      letters.map((l) => [
        l.id,
        cell(l.fields.id, 40),
        cell(l.fields.status, 8),
        cell(l.fields.attempts, 8),
        cell(l.fields.error, ERROR_COLUMN),
        cell(
          Object.entries(l.fields)
            .filter(([name]) => !shown.includes(name))
            .map(([name, value]) => `${name}=${value}`)
            .join(' '),
          BODY_COLUMN,
        ),
      ]),
      new Set([2, 3]),
      '',
    ).join('\n'),
  );
}

// ------------------------------------------------------------------------ replay and drop

async function replay(context: Context, ids: string[], options: ChangeOptions): Promise<void> {
  if (options.webhook) throw new UsageError('offline-delivery dead letters cannot be replayed');
  const targets = await resolveTargets(context, ids, options);
  let replayed = 0;
  for (const [partition, list] of targets) {
    for (let start = 0; start < list.length; start += PAGE) {
      const batch = list.slice(start, start + PAGE);
      const results = await Promise.all(
        batch.map(
          (id) =>
            context.redis.eval(
              REPLAY_SCRIPT,
              2,
              context.keys.ingestDead(partition),
              context.keys.ingest(partition),
              id,
            ) as Promise<string | 0 | null>,
        ),
      );
      results.forEach((entry, i) => {
        if (entry === null) {
          context.out(`partition ${partition}: ${batch[i]} was no longer a dead letter, skipped`);
        } else if (entry === 0) {
          context.out(`partition ${partition}: ${batch[i]} has no fields to append, left dead`);
        } else {
          replayed++;
          if (!options.all) {
            context.out(`partition ${partition}: ${batch[i]} replayed as ingest entry ${entry}`);
          }
        }
      });
    }
  }
  context.out(
    `replayed ${replayed} dead ${replayed === 1 ? 'letter' : 'letters'} to the ingest stream`,
  );
}

async function drop(context: Context, ids: string[], options: ChangeOptions): Promise<void> {
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
  const bad = ids.filter((id) => !STREAM_ID.test(id));
  if (bad.length > 0) {
    throw new UsageError(
      `not a stream id (<ms>-<seq>, as bubble dead list shows): ${bad.map((id) => JSON.stringify(printable(id, 40))).join(' ')}`,
    );
  }
  return [...new Set(ids)];
}

// -------------------------------------------------------------------------------- helpers

function deadLetter(partition: number, id: string, raw: string[]): DeadLetter {
  const fields = pairs(raw);
  const named = (name: string): string | null => fields[name] ?? null;
  const deliveries = Number(fields.deliveries);
  const other = Object.fromEntries(
    Object.entries(fields).filter(
      ([name]) => !DEAD_LETTER_FIELDS.has(name) && !['v', 'op', 'body'].includes(name),
    ),
  );
  return {
    partition,
    id,
    entry: named('entry'),
    v: named('v'),
    op: named('op'),
    body: named('body'),
    error: named('error'),
    deliveries: fields.deliveries !== undefined && Number.isFinite(deliveries) ? deliveries : null,
    ...(Object.keys(other).length > 0 ? { other } : {}),
  };
}

function pairs(raw: string[]): Record<string, string> {
  const fields: Record<string, string> = {};
  for (let i = 0; i + 1 < raw.length; i += 2) fields[raw[i]!] = raw[i + 1]!;
  return fields;
}

function compareIds(a: string, b: string): number {
  const [aMs, aSeq] = a.split('-').map(BigInt) as [bigint, bigint];
  const [bMs, bSeq] = b.split('-').map(BigInt) as [bigint, bigint];
  return aMs !== bMs ? (aMs < bMs ? -1 : 1) : aSeq === bSeq ? 0 : aSeq < bSeq ? -1 : 1;
}

function partitionOption(text: string): number {
  return countOption(0, 1023)(text);
}

function countOption(min: number, max: number) {
  return (text: string): number => {
    const value = Number(text);
    if (!/^\d+$/.test(text.trim()) || !Number.isSafeInteger(value) || value < min || value > max) {
      throw new InvalidArgumentError(`an integer from ${min} to ${max}`);
    }
    return value;
  };
}
