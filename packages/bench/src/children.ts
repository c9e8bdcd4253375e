import { spawn, type ChildProcess } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

/** The CLI entry point, beside this package in the monorepo. */
export const BUBBLE_BIN = fileURLToPath(new URL('../../cli/bin/bubble.js', import.meta.url));

const STOP_GRACE_MS = 15_000;
const TAIL_LINES = 40;

export interface RoleChild {
  readonly pid: number;
  /** The last lines the child printed (pino JSON), for failure messages. */
  tail(): string;
  /** Set once the child exited; the exit code or signal. */
  exited(): string | null;
  /** SIGTERM, SIGKILL after a grace period. Idempotent. */
  stop(): Promise<void>;
}

const live = new Set<ChildProcess>();
let hooked = false;

/** CPU seconds (user + system) a process used so far, from /proc (Linux); null elsewhere. */
export async function processCpuSeconds(pid: number): Promise<number | null> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name, which is in parentheses and may hold spaces.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return null;
  }
}

/** USER_HZ: 100 on every Linux architecture Node runs on. */
const CLOCK_TICKS = 100;

/** Resident set size of a process in bytes, from /proc (Linux); null elsewhere. */
export async function processRssBytes(pid: number): Promise<number | null> {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const kb = /^VmRSS:\s+(\d+) kB/m.exec(status)?.[1];
    return kb === undefined ? null : Number(kb) * 1024;
  } catch {
    return null;
  }
}

/** Open file descriptors of a process (Linux); null elsewhere. */
export async function processFdCount(pid: number): Promise<number | null> {
  try {
    return (await readdir(`/proc/${pid}/fd`)).length;
  } catch {
    return null;
  }
}

/** The hard RLIMIT_NOFILE of this process, which children inherit (Linux); null elsewhere. */
export async function openFilesHardLimit(): Promise<number | null> {
  try {
    const limits = await readFile('/proc/self/limits', 'utf8');
    const hard = /^Max open files\s+\S+\s+(\S+)/m.exec(limits)?.[1];
    return hard === undefined || hard === 'unlimited' ? null : Number(hard);
  } catch {
    return null;
  }
}

/** A bench that dies must not leave cores behind. */
function killLiveOnExit(): void {
  if (hooked) return;
  hooked = true;
  process.on('exit', () => {
    for (const child of live) child.kill('SIGKILL');
  });
  // A bench stopped by a signal exits through 'exit' too, so its role children go with it.
  process.once('SIGINT', () => process.exit(130));
  process.once('SIGTERM', () => process.exit(143));
}

/** Kills `child` with SIGKILL if this process exits while it still runs. */
export function killOnExit(child: ChildProcess): void {
  killLiveOnExit();
  live.add(child);
  child.once('exit', () => live.delete(child));
}

/** Stops `children` last started first (a core before the server that assigns it pools). */
export async function stopAll(children: RoleChild[]): Promise<void> {
  for (const child of [...children].reverse()) await child.stop().catch(() => {});
}

/**
 * Runs `bubble <role>` as a child process of its own. Lines at warn level or above go to `log`.
 */
export function spawnRole(options: {
  role: 'core' | 'server' | 'gateway';
  env: Record<string, string>;
  nodeArgs?: string[];
  log: (line: string) => void;
}): RoleChild {
  killLiveOnExit();
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), BUBBLE_BIN, options.role], {
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);
  const lines: string[] = [];
  let exit: string | null = null;
  let stopRequested = false;
  const exitedPromise = new Promise<void>((resolve) => {
    child.once('exit', (code, signal) => {
      exit = signal ?? String(code);
      live.delete(child);
      resolve();
    });
    child.once('error', (err) => {
      exit = `spawn failed: ${err.message}`;
      live.delete(child);
      resolve();
    });
  });
  const onData = (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n')) {
      if (line.trim() === '') continue;
      lines.push(line);
      if (lines.length > TAIL_LINES) lines.shift();
      const level = /"level":(\d+)/.exec(line);
      if (!stopRequested && (!level || Number(level[1]) >= 40))
        options.log(`  [${options.role}] ${line}`);
    }
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  let stopping: Promise<void> | undefined;
  return {
    pid: child.pid ?? -1,
    tail: () => lines.join('\n'),
    exited: () => exit,
    stop: () =>
      (stopping ??= (async () => {
        if (exit !== null) return;
        stopRequested = true;
        child.kill('SIGTERM');
        let timer: NodeJS.Timeout | undefined;
        const graceful = await Promise.race([
          exitedPromise.then(() => true),
          new Promise<boolean>((resolve) => {
            timer = setTimeout(() => resolve(false), STOP_GRACE_MS);
          }),
        ]);
        clearTimeout(timer);
        if (!graceful) {
          child.kill('SIGKILL');
          await exitedPromise;
        }
      })()),
  };
}
