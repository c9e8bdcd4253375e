/**
 * One `bubble <command>` child process of the built CLI, for tests of how it starts and refuses
 * to: its JSON log lines, the rest of its output, its exit, and whether its port ever accepted
 * a connection. Every wait has a deadline.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { waitFor } from '@bubble/test-utils';
import { ROOT } from '../cluster/harness.js';
import { cleanEnv } from '../support/clean-env.js';
import { readJsonLines } from '../support/json-lines.js';

export { buildOnce } from '../cluster/harness.js';

export const BIN = path.join(ROOT, 'packages/cli/bin/bubble.js');

export interface LogLine {
  level: number;
  msg: string;
  [field: string]: unknown;
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export class CliRun {
  readonly child: ChildProcess;
  readonly lines: LogLine[] = [];
  other = '';
  stderr = '';
  exit: Exit | null = null;
  readonly exited: Promise<Exit>;

  constructor(args: string[], env: Record<string, string>, cwd: string) {
    this.child = spawn(process.execPath, [BIN, ...args], {
      cwd,
      env: cleanEnv({ LOG_LEVEL: 'info', ...env }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    readJsonLines<LogLine>(
      this.child.stdout!,
      (line) => this.lines.push(line),
      (text) => (this.other += text),
    );
    this.child.stderr!.on('data', (chunk: Buffer) => (this.stderr += chunk.toString('utf8')));
    this.exited = new Promise((resolve) => {
      this.child.once('exit', (code, signal) => resolve((this.exit = { code, signal })));
    });
  }

  describe(): string {
    const lines = this.lines.slice(-20).map((line) => JSON.stringify(line));
    return `exit ${JSON.stringify(this.exit)}\n${lines.join('\n')}\n${this.other}\n--- stderr\n${this.stderr}`;
  }

  /** Resolves with the log line once `bubble <role> is listening` appears. */
  async listening(role: string, timeoutMs = 30_000): Promise<LogLine> {
    const line = await waitFor(
      () => {
        if (this.exit)
          throw new Error(`bubble ${role} exited before listening\n${this.describe()}`);
        return this.lines.find((line) => line.msg === `bubble ${role} is listening`);
      },
      { timeoutMs, intervalMs: 20, message: `bubble ${role} never listened\n${this.describe()}` },
    );
    return line!;
  }

  async exitWithin(timeoutMs = 15_000): Promise<Exit> {
    await waitFor(() => this.exit !== null, {
      timeoutMs,
      intervalMs: 20,
      message: `the process did not exit within ${timeoutMs} ms\n${this.describe()}`,
    });
    return this.exit!;
  }

  kill(): void {
    if (!this.exit) this.child.kill('SIGKILL');
  }
}

/** Whether a TCP connection to host:port is accepted (false when refused). */
export function accepts(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/**
 * Runs `bubble <args>` and keeps trying to connect to `port` until the process exits: the
 * answer says whether any attempt was accepted, so a refusal "before it listens" is checked.
 */
export async function runProbingPort(
  args: string[],
  env: Record<string, string>,
  cwd: string,
  port: number,
): Promise<{ run: CliRun; exit: Exit; accepted: boolean }> {
  const run = new CliRun(args, env, cwd);
  let accepted = false;
  const probing = (async () => {
    while (run.exit === null) {
      if (await accepts(port)) accepted = true;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  })();
  try {
    const exit = await run.exitWithin();
    await probing;
    return { run, exit, accepted };
  } finally {
    run.kill();
  }
}
