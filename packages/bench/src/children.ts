import type { ChildProcess } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { freePort, reapOnExit, RoleProcess } from '@bubble/test-utils';

/** CPU seconds (user + system) a process used so far, from /proc (Linux); null elsewhere. */
export async function processCpuSeconds(pid: number): Promise<number | null> {
  const times = await processCpuTimes(pid);
  return times && times.user + times.system;
}

/** User and kernel CPU seconds of a process, from /proc (Linux); null elsewhere. */
export async function processCpuTimes(
  pid: number,
): Promise<{ user: number; system: number } | null> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name, which is in parentheses and may hold spaces.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { user: Number(fields[11]) / CLOCK_TICKS, system: Number(fields[12]) / CLOCK_TICKS };
  } catch {
    return null;
  }
}

/** Context switches of a process so far (Linux): those it chose (waits) and those forced on it. */
export async function processContextSwitches(
  pid: number | 'self',
): Promise<{ voluntary: number; involuntary: number } | null> {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const voluntary = /^voluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1];
    const involuntary = /^nonvoluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1];
    if (voluntary === undefined || involuntary === undefined) return null;
    return { voluntary: Number(voluntary), involuntary: Number(involuntary) };
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

let exitsOnSignals = false;

/**
 * A bench stopped by a signal exits through 'exit', where the children it still runs are
 * killed (reapOnExit): a bench that dies must not leave cores behind.
 */
function exitOnSignals(): void {
  if (exitsOnSignals) return;
  exitsOnSignals = true;
  process.once('SIGINT', () => process.exit(130));
  process.once('SIGTERM', () => process.exit(143));
}

/** Kills `child` with SIGKILL if this process exits while it still runs. */
export function killOnExit(child: ChildProcess): void {
  exitOnSignals();
  const forget = reapOnExit(child);
  child.once('exit', forget);
}

/** Stops `children` last started first (a core before the server that assigns it pools). */
export async function stopAll(children: RoleProcess[]): Promise<void> {
  for (const child of [...children].reverse()) await child.stop().catch(() => {});
}

/**
 * Runs `bubble <role>` on `port` (a free one by default) as a child process of its own, in this
 * process's environment plus `env`. Lines at warn level or above go to `log` until it is asked to stop.
 */
export async function spawnRole(options: {
  role: 'core' | 'server' | 'gateway';
  env: Record<string, string>;
  nodeArgs?: string[];
  port?: number;
  log: (line: string) => void;
}): Promise<RoleProcess> {
  exitOnSignals();
  const child: RoleProcess = new RoleProcess({
    role: options.role,
    port: options.port ?? (await freePort()),
    env: options.env,
    nodeArgs: options.nodeArgs,
    inheritEnv: true,
    dieWithParent: false,
    onLine: (text, log) => {
      const quiet = typeof log?.level === 'number' && log.level < 40;
      if (!quiet && !child.stopRequested) options.log(`  [${options.role}] ${text}`);
    },
  });
  return child;
}
