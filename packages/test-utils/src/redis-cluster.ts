import { Redis } from 'ioredis';
import { redisServerVersion, startRedisServer, type RedisServerHandle } from './redis-server.js';
import { waitFor } from './wait-for.js';

const HOST = '127.0.0.1' as const;
const CLUSTER_DEADLINE_MS = 20_000;
const CLUSTER_SLOTS = 16_384;

export interface RedisClusterNode {
  host: string;
  port: number;
}

export interface RedisClusterHandle {
  /** Every node, masters and replicas: seeds for a client. */
  nodes: RedisClusterNode[];
  /** The servers started as masters (a failover may have demoted some since). */
  servers: RedisServerHandle[];
  /** The servers started as replicas, replica k of master i at i * replicas + k. */
  replicas: RedisServerHandle[];
  /** The roles as the cluster sees them now (after failovers too). */
  topology(): Promise<ClusterTopology>;
  stop(): Promise<void>;
}

export interface ClusterTopology {
  /** Masters that serve slots and are not failed, each with its slot ranges and replicas. */
  masters: Array<{
    server: RedisServerHandle;
    id: string;
    /** [first, last] ranges; a single slot as [slot]. */
    slots: Array<[number, number?]>;
    replicas: RedisServerHandle[];
  }>;
}

async function connectAdmin(port: number, connectTimeout?: number): Promise<Redis> {
  const client = new Redis({
    host: HOST,
    port,
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    enableOfflineQueue: false,
    ...(connectTimeout === undefined ? {} : { connectTimeout }),
  });
  client.on('error', () => {
    // surfaced through command rejections instead
  });
  await client.connect();
  return client;
}

export interface RedisClusterOptions {
  masters?: number;
  /** Replicas per master (default 0), each attached with CLUSTER REPLICATE and synced. */
  replicas?: number;
  /**
   * cluster-node-timeout: how long a master may be silent before its replica takes over.
   * Default 2000 ms with replicas (a killed master fails over within seconds), else Redis's.
   */
  nodeTimeoutMs?: number;
}

/**
 * Starts `masters` cluster-enabled servers, splits the 16384 slots evenly, joins them, attaches
 * `replicas` replicas to each master, and waits until every node reports `cluster_state:ok`,
 * knows every replica, and each replica has synced.
 */
export async function startRedisCluster(
  opts: RedisClusterOptions = {},
): Promise<RedisClusterHandle> {
  const masters = opts.masters ?? 3;
  const replicas = opts.replicas ?? 0;
  if (!Number.isInteger(masters) || masters < 1) {
    throw new Error(`startRedisCluster: masters must be a positive integer, got ${masters}`);
  }
  if (!Number.isInteger(replicas) || replicas < 0) {
    throw new Error(`startRedisCluster: replicas must be a whole number, got ${replicas}`);
  }
  const [major] = await redisServerVersion();
  const hasAddSlotsRange = major >= 7;
  const nodeTimeoutMs = opts.nodeTimeoutMs ?? (replicas > 0 ? 2000 : undefined);
  const args = nodeTimeoutMs === undefined ? [] : ['--cluster-node-timeout', String(nodeTimeoutMs)];
  // A replica's first sync would otherwise wait 5 s for others to share the transfer.
  if (replicas > 0) args.push('--repl-diskless-sync-delay', '0');
  const total = masters * (1 + replicas);

  const started = await Promise.allSettled(
    Array.from({ length: total }, () => startRedisServer({ cluster: true, args })),
  );
  const all = started.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  const stopAll = async (): Promise<void> => {
    await Promise.all(all.map((s) => s.stop()));
  };
  const failed = started.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) {
    await stopAll();
    throw failed.reason;
  }
  const servers = all.slice(0, masters);
  const replicaServers = all.slice(masters);

  const clients: Redis[] = [];
  try {
    for (const server of all) clients.push(await connectAdmin(server.port));
    const masterClients = clients.slice(0, masters);

    for (const [i, client] of clients.entries()) {
      // Distinct config epochs avoid a slow epoch-collision resolution (as redis-cli does).
      await client.call('CLUSTER', ['SET-CONFIG-EPOCH', i + 1]);
    }
    for (const [i, client] of masterClients.entries()) {
      const first = Math.floor((i * CLUSTER_SLOTS) / masters);
      const last = Math.floor(((i + 1) * CLUSTER_SLOTS) / masters) - 1;
      if (hasAddSlotsRange) {
        await client.call('CLUSTER', ['ADDSLOTSRANGE', first, last]);
      } else {
        for (let from = first; from <= last; from += 1000) {
          const slots: number[] = [];
          for (let s = from; s <= Math.min(last, from + 999); s++) slots.push(s);
          await client.call('CLUSTER', ['ADDSLOTS', ...slots]);
        }
      }
    }

    // Meeting every node from one seed is enough: gossip spreads the rest.
    const seed = clients[0];
    if (seed) {
      for (const server of all.slice(1)) {
        await seed.call('CLUSTER', ['MEET', HOST, server.port]);
      }
    }
    const knowsAll = async (client: Redis) =>
      String(await client.call('CLUSTER', ['INFO'])).includes(`cluster_known_nodes:${total}\r\n`);
    await waitFor(async () => (await Promise.all(clients.map(knowsAll))).every(Boolean), {
      timeoutMs: CLUSTER_DEADLINE_MS,
      intervalMs: 100,
      message: `the ${total} nodes of the redis cluster never all met`,
    });

    // Replica k of master i is replicaServers[i * replicas + k].
    const masterIds = await Promise.all(
      masterClients.map(async (client) => String(await client.call('CLUSTER', ['MYID']))),
    );
    for (const [j, client] of clients.slice(masters).entries()) {
      await client.call('CLUSTER', ['REPLICATE', masterIds[Math.floor(j / replicas)]!]);
    }

    await waitFor(
      async () => {
        for (const client of clients) {
          const info = String(await client.call('CLUSTER', ['INFO']));
          if (!info.includes('cluster_state:ok')) return false;
          // Every node must see every replica as one, or it would not vote for its promotion.
          const nodes = String(await client.call('CLUSTER', ['NODES']));
          const slaves = nodes
            .split('\n')
            .filter((line) => (line.split(' ')[2] ?? '').split(',').includes('slave'));
          if (slaves.length !== masters * replicas) return false;
        }
        for (const client of clients.slice(masters)) {
          const replication = await client.info('replication');
          if (!/master_link_status:up/.test(replication)) return false;
          if (!/master_sync_in_progress:0/.test(replication)) return false;
        }
        return true;
      },
      {
        timeoutMs: CLUSTER_DEADLINE_MS,
        intervalMs: 100,
        message: `redis cluster of ${masters} masters and ${replicas} replicas each did not reach cluster_state:ok with synced replicas`,
      },
    );
  } catch (err) {
    for (const client of clients) client.disconnect();
    await stopAll();
    throw err;
  }
  for (const client of clients) client.disconnect();

  let stopping: Promise<void> | undefined;
  return {
    nodes: all.map((s) => ({ host: s.host, port: s.port })),
    servers,
    replicas: replicaServers,
    topology: () => clusterTopology(all),
    stop: () => (stopping ??= stopAll()),
  };
}

/** Who is master of which slots now, and who replicates whom, as the live nodes tell it. */
async function clusterTopology(all: readonly RedisServerHandle[]): Promise<ClusterTopology> {
  const byPort = new Map(all.map((server) => [server.port, server]));
  let lines: string[] | undefined;
  for (const server of all) {
    let client: Redis | undefined;
    try {
      client = await connectAdmin(server.port, 1000);
      lines = String(await client.call('CLUSTER', ['NODES']))
        .trim()
        .split('\n');
      break;
    } catch {
      // A killed node: ask the next one.
    } finally {
      client?.disconnect();
    }
  }
  if (!lines) throw new Error('no node of the redis cluster answers');
  const nodes = lines.map((line) => {
    const [id, address, flags, masterId, , , , linkState, ...slots] = line.split(' ');
    const port = Number(address!.split('@')[0]!.split(':').pop());
    return { id: id!, port, flags: flags!.split(','), masterId: masterId!, linkState, slots };
  });
  const failed = (flags: string[]) => flags.includes('fail') || flags.includes('fail?');
  const masters = nodes
    .filter((n) => n.flags.includes('master') && !failed(n.flags) && n.slots.length > 0)
    .map((n) => ({
      server: byPort.get(n.port)!,
      id: n.id,
      slots: n.slots.map((range) => range.split('-').map(Number) as [number, number?]),
      replicas: nodes
        .filter((r) => r.masterId === n.id && !failed(r.flags))
        .map((r) => byPort.get(r.port)!),
    }));
  return { masters };
}
