import { Cluster, Redis } from 'ioredis';
import { applyMovedReplies } from './ioredis-internals.js';

export type RedisClient = Redis | Cluster;

/** A command unanswered this long fails, so no sweep or request hangs on a lost server. */
const COMMAND_TIMEOUT_MS = 5000;

/**
 * A connection that has commands waiting and hears nothing for this long is destroyed and
 * reconnected. ioredis does not reconnect on a command timeout, so without it a socket whose
 * peer fell silent (a partition, a vanished NAT entry) would fail every command forever.
 * Connections that block on purpose (XREADGROUP) set their own, above their block time.
 */
export const SOCKET_SILENCE_MS = COMMAND_TIMEOUT_MS + 1000;

/**
 * How a cluster client follows a failover: a command whose node went away, or that met
 * CLUSTERDOWN or TRYAGAIN while a replica is promoted, is retried on the next node every
 * 200 ms, up to 16 times (≈ 3 s, about what a promotion takes at cluster-node-timeout 2 s);
 * MOVED and ASK are followed as they come, except inside an auto-pipelined batch whose
 * commands were moved to different slots: ioredis hands those MOVED errors to the callers and
 * keeps its old slot map. Rereading the map every second bounds that to about a second after
 * a promotion (it costs one CLUSTER SLOTS a second per connection group).
 */
const CLUSTER_FAILOVER = {
  retryDelayOnFailover: 200,
  retryDelayOnClusterDown: 200,
  retryDelayOnTryAgain: 200,
  maxRedirections: 16,
  slotsRefreshInterval: 1000,
  slotsRefreshTimeout: 2000,
} as const;

/**
 * A write that reached a replica answers READONLY: the master it was connected to stepped down
 * (a promoted replica's old master, or a name such as a managed primary endpoint that now
 * resolves to another server). A reconnect finds the current master behind the same address
 * or, on a cluster, a fresh slot map.
 */
function isReadonlyError(err: Error): boolean {
  return err.message.startsWith('READONLY');
}

/** Reconnect on READONLY and send the command again (2), on the new connection. */
const reconnectOnReadonly = (err: Error): 2 | false => (isReadonlyError(err) ? 2 : false);

export interface RedisTarget {
  url?: string;
  /** host:port seeds; selects Redis Cluster. */
  clusterNodes?: string[];
}

export interface ConnectOptions {
  /**
   * Batch the commands of one event-loop turn (default). Off for a client whose few commands
   * must neither wait behind a sweep's batch nor share its fate when a failover moves slots.
   */
  autoPipelining?: boolean;
}

/**
 * One client per process. Auto-pipelining turns the many independent commands of one tick
 * (a cold start's per-followee counts) into one write per node.
 */
export function connectRedis(
  target: RedisTarget,
  name = 'bubble',
  onError: (err: Error) => void = () => {},
  options: ConnectOptions = {},
): RedisClient {
  const client = open(target, name, options.autoPipelining ?? true);
  // Without a listener ioredis prints every failed reconnect; callers see the failures anyway.
  client.on('error', onError);
  return client;
}

function open(target: RedisTarget, name: string, autoPipelining: boolean): RedisClient {
  if (target.clusterNodes && target.clusterNodes.length > 0) {
    const cluster = new Cluster(
      target.clusterNodes.map((node) => {
        const [host, port] = splitHostPort(node);
        return { host, port };
      }),
      {
        enableAutoPipelining: autoPipelining,
        ...CLUSTER_FAILOVER,
        redisOptions: {
          connectionName: name,
          maxRetriesPerRequest: 2,
          commandTimeout: COMMAND_TIMEOUT_MS,
          socketTimeout: SOCKET_SILENCE_MS,
          reconnectOnError: reconnectOnReadonly,
        },
      },
    );
    applyMovedReplies(cluster);
    return cluster;
  }
  if (!target.url) throw new Error('a Redis URL or cluster nodes are required');
  return new Redis(target.url, {
    enableAutoPipelining: autoPipelining,
    connectionName: name,
    maxRetriesPerRequest: 2,
    commandTimeout: COMMAND_TIMEOUT_MS,
    socketTimeout: SOCKET_SILENCE_MS,
    reconnectOnError: reconnectOnReadonly,
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

/** A new connection to what `client` connects to, with its options (a Cluster's too). */
export function duplicateClient(client: RedisClient): RedisClient {
  // Both kinds duplicate with no arguments; their signatures differ only in what they take.
  return (client.duplicate as () => RedisClient).call(client);
}
