import { spawn, execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { diesWithParent, findExecutable, reapOnExit, terminate } from './child-processes.js';

const HOST = '127.0.0.1' as const;
const START_DEADLINE_MS = 10_000;
const STOP_GRACE_MS = 5_000;
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
export function redisServerVersion(): Promise<[number, number, number]> {
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
