import { withTimeout } from '@bubble/protocol';
import type { RedisClient } from '@bubble/store';
import { Cluster, type Redis } from 'ioredis';
import type { Logger } from 'pino';

/** What one Redis server says about eviction and persistence; null where it would not say. */
export interface RedisSettings {
  maxmemoryPolicy: string | null;
  maxmemory: string | null;
  appendonly: boolean | null;
  /** RDB save points as CONFIG GET save gives them ('' when none). */
  save: string | null;
  /** How they were read. */
  source: 'config' | 'info';
}

const CHECK_TIMEOUT_MS = 5000;

/** What a Redis server is to bubble: the store, or one master of the pool-lock quorum. */
export type RedisPurpose = 'store' | 'lock quorum';

function isEphemeral(settings: RedisSettings): boolean {
  return settings.appendonly === false && settings.save === '';
}

/**
 * The risks of running bubble on these settings, each a sentence an operator can act on
 * (docs/operations.md, "Redis as bubble needs it"). Empty when they fit.
 */
export function assessRedisSettings(
  settings: RedisSettings,
  purpose: RedisPurpose = 'store',
): string[] {
  const risks: string[] = [];
  const policy = settings.maxmemoryPolicy;
  if (policy !== null && policy !== 'noeviction') {
    risks.push(
      policy.startsWith('volatile-')
        ? `maxmemory-policy is ${policy}: at maxmemory Redis evicts keys that carry a TTL, and ` +
            "bubble's pool locks and leader key do: an evicted lock lets a second core take a " +
            'pool another still holds, an evicted leader key a second leader; set maxmemory-policy ' +
            'noeviction'
        : `maxmemory-policy is ${policy}: at maxmemory Redis evicts any key (follows, read ` +
            'cursors, badges, presence, pool leases), so badges would silently go wrong; set ' +
            'maxmemory-policy noeviction',
    );
  }
  // A lock master may run without persistence by design: a restarted one has forgotten its
  // leases, and the store's fencing tokens refuse the writes of a core whose lease moved on.
  if (purpose === 'store' && isEphemeral(settings)) {
    risks.push(
      'nothing is persisted (appendonly no and no RDB save points): a restart of this Redis ' +
        'loses every follow, read cursor and badge; set appendonly yes with appendfsync everysec',
    );
  }
  return risks;
}

function describeNode(node: Redis): string {
  const { host, port, path } = node.options;
  return path ? `unix:${path}` : `${host ?? 'localhost'}:${port ?? 6379}`;
}

async function configGet(node: Redis, name: string): Promise<string> {
  const reply = (await node.call('CONFIG', 'GET', name)) as string[];
  const value = reply[1];
  if (value === undefined) throw new Error(`CONFIG GET ${name} returned nothing`);
  return value;
}

function infoField(info: string, name: string): string | null {
  const match = new RegExp(`^${name}:(.*)$`, 'm').exec(info);
  return match ? match[1]!.trim() : null;
}

/** CONFIG GET where it is allowed, else INFO (managed Redis often renames or forbids CONFIG). */
async function readRedisSettings(node: Redis): Promise<RedisSettings> {
  try {
    const [maxmemoryPolicy, maxmemory, appendonly, save] = await Promise.all([
      configGet(node, 'maxmemory-policy'),
      configGet(node, 'maxmemory'),
      configGet(node, 'appendonly'),
      configGet(node, 'save'),
    ]);
    return { maxmemoryPolicy, maxmemory, appendonly: appendonly === 'yes', save, source: 'config' };
  } catch (configError) {
    let memory: string;
    let persistence: string;
    try {
      [memory, persistence] = await Promise.all([node.info('memory'), node.info('persistence')]);
    } catch {
      throw configError;
    }
    const aof = infoField(persistence, 'aof_enabled');
    return {
      maxmemoryPolicy: infoField(memory, 'maxmemory_policy'),
      maxmemory: infoField(memory, 'maxmemory'),
      appendonly: aof === null ? null : aof === '1',
      save: null,
      source: 'info',
    };
  }
}

/**
 * Clients without an offline queue (the lock quorum's) refuse commands until they are ready;
 * the others queue them (and a cluster's lazily connected nodes connect on the first).
 */
async function ready(node: Redis): Promise<void> {
  if (node.status === 'ready' || node.options.enableOfflineQueue !== false) return;
  await new Promise<void>((resolve) => node.once('ready', () => resolve()));
}

async function checkNode(node: Redis, purpose: RedisPurpose, logger: Logger): Promise<void> {
  const redis = describeNode(node);
  let settings: RedisSettings;
  try {
    settings = await withTimeout(
      ready(node).then(() => readRedisSettings(node)),
      CHECK_TIMEOUT_MS,
    );
  } catch (err) {
    logger.info(
      { redis, purpose, reason: (err as Error).message },
      `could not check the eviction and persistence settings of Redis at ${redis} ` +
        `(${(err as Error).message}); see docs/operations.md, "Redis as bubble needs it"`,
    );
    return;
  }
  const risks = assessRedisSettings(settings, purpose);
  const fields = { redis, purpose, ...settings };
  if (risks.length > 0) {
    logger.warn(
      { ...fields, risks },
      `Redis at ${redis} can lose bubble's state: ${risks.join('; ')}`,
    );
    return;
  }
  if (purpose === 'lock quorum' && isEphemeral(settings)) {
    logger.info(
      fields,
      `Redis lock master at ${redis} keeps nothing on disk: after a restart it has forgotten ` +
        "the leases it granted, and the store's fencing tokens keep the writes exact",
    );
    return;
  }
  if (settings.appendonly === null || settings.save === null) {
    logger.info(fields, `Redis at ${redis}: persistence could only be partly read`);
    return;
  }
  logger.info(fields, `Redis at ${redis}: eviction and persistence settings fit bubble`);
}

/**
 * Reads `maxmemory-policy` and the persistence settings of every master behind `client` (each
 * master of a Redis Cluster) and logs one warning per server whose settings can lose state.
 * Advice only: never throws, and a slow or refusing server just gets an info line.
 */
export async function checkRedisSettings(
  client: RedisClient,
  logger: Logger,
  purpose: RedisPurpose = 'store',
): Promise<void> {
  const log = logger.child({ module: 'redis-settings' });
  try {
    const nodes = client instanceof Cluster ? client.nodes('master') : [client];
    await Promise.all(nodes.map((node) => checkNode(node, purpose, log)));
  } catch (err) {
    log.info({ err }, 'could not check the Redis settings');
  }
}
