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
  nodes: RedisClusterNode[];
  servers: RedisServerHandle[];
  stop(): Promise<void>;
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
  const dir = await mkdtemp(path.join(tmpdir(), 'bubble-redis-'));
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

  const forget = reapOnExit(child, () => rmSync(dir, { recursive: true, force: true }));

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
      await rm(dir, { recursive: true, force: true });
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

/**
 * Starts `masters` cluster-enabled servers (no replicas), splits the 16384 slots evenly,
 * joins them and waits until every node reports `cluster_state:ok`.
 */
export async function startRedisCluster(
  opts: { masters?: number } = {},
): Promise<RedisClusterHandle> {
  const masters = opts.masters ?? 3;
  if (!Number.isInteger(masters) || masters < 1) {
    throw new Error(`startRedisCluster: masters must be a positive integer, got ${masters}`);
  }
  const [major] = await redisServerVersion();
  const hasAddSlotsRange = major >= 7;

  const started = await Promise.allSettled(
    Array.from({ length: masters }, () => startRedisServer({ cluster: true })),
  );
  const servers = started.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  const stopAll = async (): Promise<void> => {
    await Promise.all(servers.map((s) => s.stop()));
  };
  const failed = started.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) {
    await stopAll();
    throw failed.reason;
  }

  const clients: Redis[] = [];
  try {
    for (const server of servers) clients.push(await connectAdmin(server.port));

    for (const [i, client] of clients.entries()) {
      const first = Math.floor((i * CLUSTER_SLOTS) / masters);
      const last = Math.floor(((i + 1) * CLUSTER_SLOTS) / masters) - 1;
      // Distinct config epochs avoid a slow epoch-collision resolution (as redis-cli does).
      await client.call('CLUSTER', ['SET-CONFIG-EPOCH', i + 1]);
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
      for (const server of servers.slice(1)) {
        await seed.call('CLUSTER', ['MEET', HOST, server.port]);
      }
    }

    await waitFor(
      async () => {
        for (const client of clients) {
          const info = String(await client.call('CLUSTER', ['INFO']));
          if (!info.includes('cluster_state:ok')) return false;
          if (!info.includes(`cluster_known_nodes:${masters}\r\n`)) return false;
        }
        return true;
      },
      {
        timeoutMs: CLUSTER_DEADLINE_MS,
        intervalMs: 100,
        message: `redis cluster of ${masters} masters did not reach cluster_state:ok`,
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
    nodes: servers.map((s) => ({ host: s.host, port: s.port })),
    servers,
    stop: () => (stopping ??= stopAll()),
  };
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
