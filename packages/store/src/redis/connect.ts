import { Cluster, Redis } from 'ioredis';

export type RedisClient = Redis | Cluster;

/** A command unanswered this long fails, so no sweep or request hangs on a lost server. */
const COMMAND_TIMEOUT_MS = 5000;

export interface RedisTarget {
  url?: string;
  /** host:port seeds; selects Redis Cluster. */
  clusterNodes?: string[];
}

/**
 * One client per process. Auto-pipelining turns the many independent commands of one tick
 * (a cold start's per-followee counts) into one write per node.
 */
export function connectRedis(
  target: RedisTarget,
  name = 'bubble',
  onError: (err: Error) => void = () => {},
): RedisClient {
  const client = open(target, name);
  // Without a listener ioredis prints every failed reconnect; callers see the failures anyway.
  client.on('error', onError);
  return client;
}

function open(target: RedisTarget, name: string): RedisClient {
  if (target.clusterNodes && target.clusterNodes.length > 0) {
    return new Cluster(
      target.clusterNodes.map((node) => {
        const [host, port] = splitHostPort(node);
        return { host, port };
      }),
      {
        enableAutoPipelining: true,
        redisOptions: {
          connectionName: name,
          maxRetriesPerRequest: 2,
          commandTimeout: COMMAND_TIMEOUT_MS,
        },
      },
    );
  }
  if (!target.url) throw new Error('a Redis URL or cluster nodes are required');
  return new Redis(target.url, {
    enableAutoPipelining: true,
    connectionName: name,
    maxRetriesPerRequest: 2,
    commandTimeout: COMMAND_TIMEOUT_MS,
  });
}

function splitHostPort(node: string): [string, number] {
  const at = node.lastIndexOf(':');
  const port = Number(node.slice(at + 1));
  if (at <= 0 || !Number.isInteger(port) || port <= 0 || port > 65535) {
    throw new Error(`cluster node ${JSON.stringify(node)} is not host:port`);
  }
  return [node.slice(0, at), port];
}
