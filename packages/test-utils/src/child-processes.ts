/**
 * What every child process started for a test or a bench needs, whatever it runs: finding the
 * program, dying with its parent, being reaped when the parent goes away, and a stop that
 * escalates from SIGTERM to SIGKILL.
 */
import type { ChildProcess } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import path from 'node:path';

/** The first executable `name` on PATH or in the usual bin directories; undefined without one. */
export function findExecutable(name: string): string | undefined {
  const dirs = (process.env.PATH ?? '').split(path.delimiter).filter((d) => d.length > 0);
  // Minimal PATHs (e.g. some CI shells) may lack these; Debian installs to /usr/bin.
  for (const extra of ['/usr/local/bin', '/usr/bin', '/usr/sbin', '/bin']) {
    if (!dirs.includes(extra)) dirs.push(extra);
  }
  for (const dir of dirs) {
    const candidate = path.join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // keep looking
    }
  }
  return undefined;
}

// util-linux's setpriv execs the target with PR_SET_PDEATHSIG, so the child dies with its
// parent even when the parent is SIGKILLed; the pid stays the same. Linux only, optional.
const SETPRIV = process.platform === 'linux' ? findExecutable('setpriv') : undefined;

/** `argv` run so that it dies with this process (through setpriv where there is one). */
export function diesWithParent(argv: readonly string[]): string[] {
  return SETPRIV ? [SETPRIV, '--pdeathsig', 'SIGKILL', '--', ...argv] : [...argv];
}

interface Tracked {
  child: ChildProcess;
  cleanup: (() => void) | undefined;
}

const tracked = new Set<Tracked>();
let exitHooksInstalled = false;

function reapAll(): void {
  for (const entry of tracked) {
    try {
      entry.child.kill('SIGKILL');
    } catch {
      // already gone
    }
    try {
      entry.cleanup?.();
    } catch {
      // best effort
    }
  }
  tracked.clear();
}

/**
 * Kills every tracked child still running when this process goes away. 'exit' covers normal
 * exits; vitest stops fork workers with SIGTERM, which skips 'exit', so termination signals are
 * handled too (re-raised afterwards when nobody else handles them, keeping the default action).
 * A parent killed with SIGKILL is covered by diesWithParent.
 */
function installExitHooks(): void {
  if (exitHooksInstalled) return;
  exitHooksInstalled = true;
  process.on('exit', reapAll);
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
    const onSignal = (): void => {
      reapAll();
      if (process.listenerCount(signal) === 1) {
        process.off(signal, onSignal);
        process.kill(process.pid, signal);
      }
    };
    process.on(signal, onSignal);
  }
}

/**
 * SIGKILLs `child` (then runs `cleanup`) if this process goes away while it runs. Returns the
 * function that stops tracking it: call it once the child exited.
 */
export function reapOnExit(child: ChildProcess, cleanup?: () => void): () => void {
  installExitHooks();
  const entry: Tracked = { child, cleanup };
  tracked.add(entry);
  return () => {
    tracked.delete(entry);
  };
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * SIGTERM, and SIGKILL when `exited` has not resolved within `graceMs`; resolves once it did,
 * or `graceMs` after the SIGKILL.
 */
export async function terminate(
  child: ChildProcess,
  exited: Promise<unknown>,
  graceMs: number,
): Promise<void> {
  child.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const timedOut = await Promise.race([
    exited.then(() => false),
    new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(true), graceMs);
    }),
  ]);
  clearTimeout(timer);
  if (timedOut) {
    child.kill('SIGKILL');
    await Promise.race([exited, sleep(graceMs)]);
  }
}
