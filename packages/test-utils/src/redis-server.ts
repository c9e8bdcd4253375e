import { spawn, execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { diesWithParent, findExecutable, reapOnExit, terminate } from './child-processes.js';

const HOST = '127.0.0.1' as const;
const START_DEADLINE_MS = 10_000;
const STOP_GRACE_MS = 5_000;
const CLUSTER_DEADLINE_MS = 20_000;
const CLUSTER_SLOTS = 16_384;
const OUTPUT_TAIL_BYTES = 4_096;

export interface RedisServerOptions {
  /** Fixed port; by default a free port is picked (and retried on a bind race). */
  port?: number;
  /** Extra `redis-server` arguments, appended after the defaults (so they win). */
  args?: string[];
  cluster?: boolean;
  /**
   * The server's working directory, kept when it stops (by default a temp dir, removed): with
   * `args: ['--appendonly', 'yes']`, a server started again on the same port and `dir` (see
   * restartRedisServer) loads what the one before wrote.
   */
  dir?: string;
}

export interface RedisServerHandle {
  port: number;
  host: '127.0.0.1';
  /** `redis://127.0.0.1:<port>` */
  url: string;
  pid: number;
  /** SIGTERM, then SIGKILL after a grace period; removes the temp dir. Idempotent. */
  stop(): Promise<void>;
  /** Sends a signal (default SIGKILL) without waiting, e.g. to simulate a crash. Call stop() later to clean up. */
  kill(signal?: NodeJS.Signals): void;
}

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

export interface WaitForOptions {
  timeoutMs?: number;
  intervalMs?: number;
  message?: string;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Asks the OS for a currently free TCP port on 127.0.0.1. */
export async function freePort(): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, HOST, () => {
      const address = server.address();
      if (address === null || typeof address === 'string') {
        server.close();
        reject(new Error(`freePort: unexpected server address ${String(address)}`));
        return;
      }
      const { port } = address;
      server.close((err) => (err ? reject(err) : resolve(port)));
    });
  });
}

let redisBinaryCache: string | undefined;

function findRedisServer(): string {
  redisBinaryCache ??= findExecutable('redis-server');
  if (redisBinaryCache === undefined) {
    throw new Error(
      'redis-server binary not found on PATH. Install it, e.g. `apt-get install redis-server` ' +
        '(Debian/Ubuntu), then re-run the tests.',
    );
  }
  return redisBinaryCache;
}

let redisVersionCache: Promise<[number, number, number]> | undefined;

/** Parses `redis-server --version` ("Redis server v=7.0.15 sha=..."). */
function redisServerVersion(): Promise<[number, number, number]> {
  redisVersionCache ??= new Promise((resolve, reject) => {
    execFile(findRedisServer(), ['--version'], { timeout: 5_000 }, (err, stdout) => {
      if (err) {
        reject(new Error(`redis-server --version failed: ${err.message}`));
        return;
      }
      const m = /v=(\d+)\.(\d+)\.(\d+)/.exec(stdout);
      if (!m) {
        reject(new Error(`cannot parse redis-server version from: ${stdout.trim()}`));
        return;
      }
      resolve([Number(m[1]), Number(m[2]), Number(m[3])]);
    });
  });
  return redisVersionCache;
}

// --- single server ---------------------------------------------------------------------------

/**
 * Raw-protocol `INFO server`; resolves the server's process_id once it answers, or undefined
 * (not up yet, still loading, timed out). Never rejects. Checking the pid guards against a
 * different server that already owns the port.
 */
function probePid(port: number, timeoutMs: number): Promise<number | undefined> {
  return new Promise<number | undefined>((resolve) => {
    let buffer = Buffer.alloc(0);
    let settled = false;
    const socket = net.connect({ host: HOST, port });
    const finish = (pid: number | undefined): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(pid);
    };
    const timer = setTimeout(() => finish(undefined), timeoutMs);
    socket.once('connect', () => socket.write('INFO server\r\n'));
    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      const headerEnd = buffer.indexOf('\r\n');
      if (headerEnd < 0) return;
      const header = buffer.subarray(0, headerEnd).toString('latin1');
      if (!header.startsWith('$')) {
        finish(undefined); // e.g. -LOADING
        return;
      }
      const length = Number(header.slice(1));
      if (buffer.length < headerEnd + 2 + length) return;
      const body = buffer.subarray(headerEnd + 2, headerEnd + 2 + length).toString('latin1');
      const match = /^process_id:(\d+)\r?$/m.exec(body);
      finish(match ? Number(match[1]) : undefined);
    });
    socket.once('error', () => finish(undefined));
    socket.once('close', () => finish(undefined));
  });
}

class EarlyExitError extends Error {
  constructor(
    message: string,
    readonly output: string,
  ) {
    super(message);
    this.name = 'EarlyExitError';
  }
}

async function spawnRedisOnce(
  port: number,
  opts: RedisServerOptions,
  binary: string,
): Promise<RedisServerHandle> {
  const ownDir = opts.dir === undefined;
  const dir = opts.dir ?? (await mkdtemp(path.join(tmpdir(), 'bubble-redis-')));
  const removeDir = (): void => {
    if (ownDir) rmSync(dir, { recursive: true, force: true });
  };
  const args = [
    '--port',
    String(port),
    '--bind',
    HOST,
    '--save',
    '',
    '--appendonly',
    'no',
    '--protected-mode',
    'no',
    '--daemonize',
    'no',
    '--dir',
    dir,
  ];
  if (opts.cluster) {
    args.push('--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf');
  }
  args.push(...(opts.args ?? []));

  const [command, ...commandArgs] = diesWithParent([binary, ...args]);
  const child = spawn(command!, commandArgs, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });

  // Keep draining stdout/stderr for the whole lifetime: a full pipe would block redis.
  let tail = '';
  const onOutput = (chunk: Buffer): void => {
    tail = (tail + chunk.toString('utf8')).slice(-OUTPUT_TAIL_BYTES);
  };
  child.stdout?.on('data', onOutput);
  child.stderr?.on('data', onOutput);

  const forget = reapOnExit(child, removeDir);

  let spawnError: Error | undefined;
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => {
      forget();
      resolve();
    });
    child.once('error', (err) => {
      spawnError = err;
      // 'exit' may never fire when spawning itself failed.
      if (child.pid === undefined) {
        forget();
        resolve();
      }
    });
  });
  let hasExited = false;
  void exited.then(() => {
    hasExited = true;
  });

  // A leaked server must not keep the test process alive; the exit hook reaps it.
  child.unref();
  for (const stream of [child.stdout, child.stderr]) {
    if (stream && 'unref' in stream && typeof stream.unref === 'function') stream.unref();
  }

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      if (!hasExited) await terminate(child, exited, STOP_GRACE_MS);
      forget();
      if (ownDir) await rm(dir, { recursive: true, force: true });
    })();
    return stopping;
  };

  // Poll until our own child answers (or exits early), up to the deadline.
  const deadline = Date.now() + START_DEADLINE_MS;
  for (;;) {
    if (hasExited || spawnError) {
      await stop();
      const reason = spawnError
        ? `failed to spawn ${binary}: ${spawnError.message}`
        : `redis-server exited early (code ${String(child.exitCode)}, signal ${String(child.signalCode)})`;
      throw new EarlyExitError(`${reason}\n--- output tail ---\n${tail}`, tail);
    }
    const pid = await probePid(port, 500);
    if (pid !== undefined && pid === child.pid) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(
        `redis-server on port ${port} did not answer within ${START_DEADLINE_MS} ms\n` +
          `--- output tail ---\n${tail}`,
      );
    }
    await sleep(25);
  }

  return {
    port,
    host: HOST,
    url: `redis://${HOST}:${port}`,
    pid: child.pid ?? -1,
    stop,
    kill(signal: NodeJS.Signals = 'SIGKILL') {
      if (!hasExited) child.kill(signal);
    },
  };
}

/** Spawns a throwaway `redis-server` on 127.0.0.1 with persistence disabled and a temp dir. */
export async function startRedisServer(opts: RedisServerOptions = {}): Promise<RedisServerHandle> {
  const binary = findRedisServer();
  if (opts.port !== undefined) return spawnRedisOnce(opts.port, opts, binary);

  // freePort() closes its listener before redis binds, so another process may grab the port.
  const attempts = 3;
  for (let attempt = 1; ; attempt++) {
    try {
      return await spawnRedisOnce(await freePort(), opts, binary);
    } catch (err) {
      const bindRace = err instanceof EarlyExitError && /address already in use/i.test(err.output);
      if (!bindRace || attempt >= attempts) throw err;
    }
  }
}

/**
 * kill -9 of `server` (a crash: nothing flushed beyond what it wrote already), then a new
 * redis-server on the same port: from `dir` (what the killed one persisted there) or, without
 * it, empty. Resolves once the new one answers; the old handle is spent.
 */
export async function restartRedisServer(
  server: RedisServerHandle,
  opts: Omit<RedisServerOptions, 'port'> = {},
): Promise<RedisServerHandle> {
  server.kill('SIGKILL');
  await server.stop();
  return startRedisServer({ ...opts, port: server.port });
}

// --- cluster ---------------------------------------------------------------------------------

async function connectAdmin(port: number): Promise<Redis> {
  const client = new Redis({
    host: HOST,
    port,
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    enableOfflineQueue: false,
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
    const client = new Redis({
      host: HOST,
      port: server.port,
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      enableOfflineQueue: false,
      connectTimeout: 1000,
    });
    client.on('error', () => {});
    try {
      await client.connect();
      lines = String(await client.call('CLUSTER', ['NODES']))
        .trim()
        .split('\n');
      break;
    } catch {
      // A killed node: ask the next one.
    } finally {
      client.disconnect();
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

// --- generic helpers -------------------------------------------------------------------------

function describe(value: unknown): string {
  if (value instanceof Error) return value.stack ?? `${value.name}: ${value.message}`;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/**
 * Polls `fn` until it returns (or resolves to) a truthy value and returns that value.
 * Throws after the deadline with the last thrown error or falsy value.
 */
export async function waitFor<T>(fn: () => T | Promise<T>, opts: WaitForOptions = {}): Promise<T> {
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const intervalMs = opts.intervalMs ?? 20;
  const deadline = Date.now() + timeoutMs;
  let last: { error: unknown } | { value: unknown } = { value: undefined };
  for (;;) {
    const remaining = deadline - Date.now();
    let timer: NodeJS.Timeout | undefined;
    try {
      // An attempt that never settles must not outlive the deadline.
      const timedOut = Symbol('timedOut');
      const result = await Promise.race([
        Promise.resolve().then(fn),
        new Promise<typeof timedOut>((resolve) => {
          timer = setTimeout(() => resolve(timedOut), Math.max(remaining, 0));
        }),
      ]);
      if (result === timedOut) {
        last = { error: new Error('the last attempt had not settled by the deadline') };
      } else if (result) {
        return result;
      } else {
        last = { value: result };
      }
    } catch (error) {
      last = { error };
    } finally {
      clearTimeout(timer);
    }
    if (Date.now() >= deadline) break;
    await sleep(Math.min(intervalMs, Math.max(deadline - Date.now(), 0)));
  }
  const detail =
    'error' in last ? `last error: ${describe(last.error)}` : `last value: ${describe(last.value)}`;
  throw new Error(`${opts.message ?? 'waitFor timed out'} (after ${timeoutMs} ms; ${detail})`, {
    cause: 'error' in last ? last.error : undefined,
  });
}

let prefixCounter = 0;

/** A fresh key prefix (only [A-Za-z0-9_]) so tests sharing a Redis never collide. */
export function uniquePrefix(label?: string): string {
  prefixCounter += 1;
  const random = Math.random().toString(36).slice(2, 8);
  const base = `t${Date.now().toString(36)}${prefixCounter.toString(36)}${random}`;
  if (label === undefined || label === '') return base;
  return `${base}_${label.replace(/[^A-Za-z0-9_]/g, '_')}`;
}
