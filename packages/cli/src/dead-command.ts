import { connectRedis, RedisKeys, type RedisClient } from '@bubble/store';
import { Command, CommanderError } from 'commander';
import { loadConfig } from './config.js';
import { drop, replay } from './dead-change.js';
import { UsageError, type ChangeOptions, type Context, type ListOptions } from './dead-context.js';
import { list } from './dead-list.js';
import { intOption } from './option-parsers.js';
import { hasRedis } from './store-factory.js';

/**
 * `bubble dead list|replay|drop`: the dead letters of the ingest stream (`<prefix>:ingest:dead{i}`,
 * the entry's fields plus `entry`, `error`, `deliveries`) and, with --webhook, of offline
 * delivery (`<prefix>:webhook:dead`), read and changed in Redis directly. A bad argument (an id
 * that is malformed or not a dead letter, a partition out of range) changes nothing and exits 2.
 */

const MAX_LIMIT = 100_000;
const USAGE_EXIT = 2;
const CONNECT_TIMEOUT_MS = 10_000;

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
    .option('--limit <n>', 'show at most n', intOption(1, MAX_LIMIT), 100)
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

function partitionOption(text: string): number {
  return intOption(0, 1023)(text);
}
