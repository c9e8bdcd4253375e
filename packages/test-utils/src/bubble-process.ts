/**
 * `bubble <args>` as a child process of the built CLI, for the tests and the bench alike: its
 * environment (the parent's bubble settings left out unless asked for), its output kept and its
 * JSON log lines parsed as they arrive, waits with a deadline (a log line, an HTTP 200, the
 * exit) that fail as soon as the process is gone, signals, and a stop that escalates.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { diesWithParent, reapOnExit, terminate } from './child-processes.js';
import { cleanEnv } from './clean-env.js';

/** The CLI entry point, beside this package in the monorepo (from src/ and dist/ alike). */
export const BUBBLE_BIN = fileURLToPath(new URL('../../cli/bin/bubble.js', import.meta.url));

const POLL_MS = 20;
const RECENT_LINES = 200;
const DESCRIBE_LOG_LINES = 40;
const DESCRIBE_OTHER_CHARS = 4_000;

export type Role = 'server' | 'core' | 'gateway' | 'all';

/** One pino line. */
export interface LogLine {
  level: number;
  time: number;
  msg: string;
  /** The node id; core and server log it with every line. */
  node?: string;
  [field: string]: unknown;
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Why it could not be started, when it could not. */
  error?: string;
}

/** An exit in a word: the signal, the code, or why it never started. */
export function exitText(exit: Exit): string {
  return exit.error ?? exit.signal ?? String(exit.code);
}

export interface BubbleProcessOptions {
  /** What follows `bubble`: a role, or a command and its flags. */
  args: readonly string[];
  /** Settings for the process, over the parent's environment (see inheritEnv). */
  env?: Record<string, string>;
  /**
   * Start from the parent's whole environment. By default whatever bubble reads is left out
   * of it (cleanEnv), so the shell that runs the tests cannot change what the process does.
   */
  inheritEnv?: boolean;
  cwd?: string;
  /** Flags for node, before the CLI's path (e.g. --cpu-prof). */
  nodeArgs?: readonly string[];
  /** The program and arguments that run the CLI, when not this node on BUBBLE_BIN. */
  command?: readonly string[];
  /**
   * A program the CLI runs under, its arguments first (e.g. `faketime -f +30s`). The CLI is
   * its child and still dies with it, so a signal to this process's pid reaches the CLI too.
   */
  runUnder?: readonly string[];
  /** Dies with this process even when this one is SIGKILLed (setpriv); default true. */
  dieWithParent?: boolean;
  /** For failure messages; `bubble <args>` by default. */
  name?: string;
  /** Every line of output as it arrives, with its JSON when it is a log line. */
  onLine?: (text: string, log: LogLine | undefined) => void;
}

export class BubbleProcess {
  readonly child: ChildProcess;
  readonly name: string;
  /** Its JSON log lines, in order. */
  readonly lines: LogLine[] = [];
  /** All it wrote to stdout, and to stderr. */
  stdout = '';
  stderr = '';
  /** The lines that were not JSON, from both streams, as they came. */
  other = '';
  /** Set once it exited. */
  exit: Exit | null = null;
  /** Resolves once it exited and its output was read to the end. */
  readonly exited: Promise<Exit>;
  private closed = false;
  private readonly recent: string[] = [];
  private stopping: Promise<void> | undefined;

  constructor(options: BubbleProcessOptions) {
    this.name = options.name ?? `bubble ${options.args.join(' ')}`;
    const cli = options.command ?? [process.execPath, ...(options.nodeArgs ?? []), BUBBLE_BIN];
    // A wrapper that forks (faketime does) would leave the CLI running after a kill -9 of it.
    const runner = options.runUnder ? [...options.runUnder, ...diesWithParent(cli)] : cli;
    const argv = [...runner, ...options.args];
    const [program, ...args] = options.dieWithParent === false ? argv : diesWithParent(argv);
    this.child = spawn(program!, args, {
      cwd: options.cwd,
      env: options.inheritEnv ? { ...process.env, ...options.env } : cleanEnv(options.env),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const forget = reapOnExit(this.child);
    const onLine = (text: string) => {
      const log = parseLogLine(text);
      if (log) this.lines.push(log);
      else this.other += `${text}\n`;
      this.recent.push(text);
      if (this.recent.length > RECENT_LINES) this.recent.shift();
      options.onLine?.(text, log);
    };
    readLines(this.child.stdout!, (chunk) => (this.stdout += chunk), onLine);
    readLines(this.child.stderr!, (chunk) => (this.stderr += chunk), onLine);
    this.exited = new Promise((resolve) => {
      this.child.once('exit', (code, signal) => {
        this.exit = { code, signal };
        forget();
      });
      // A spawn that failed gives 'error' and 'close', no 'exit'.
      this.child.once('error', (err) => {
        if (this.child.pid !== undefined) return;
        this.exit = { code: null, signal: null, error: `spawn failed: ${err.message}` };
        forget();
      });
      this.child.once('close', () => {
        this.closed = true;
        this.exit ??= { code: this.child.exitCode, signal: this.child.signalCode };
        resolve(this.exit);
      });
    });
  }

  /** Runs `bubble <args>` to its end; fails when it takes longer than `timeoutMs`. */
  static async run(
    options: BubbleProcessOptions,
    timeoutMs?: number,
  ): Promise<Exit & { stdout: string; stderr: string }> {
    const run = new BubbleProcess(options);
    const exit = await run.waitExit(timeoutMs);
    return { ...exit, stdout: run.stdout, stderr: run.stderr };
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  get alive(): boolean {
    return this.exit === null;
  }

  /** Whether stop() was called: what it logs from then on is its way out. */
  get stopRequested(): boolean {
    return this.stopping !== undefined;
  }

  /** Its log lines with message `msg`, logged at `since` or later. */
  logs(msg: string, since = 0): LogLine[] {
    return this.lines.filter((l) => l.msg === msg && l.time >= since);
  }

  /** The first log line matching `predicate`, once there is one; fails once it is gone. */
  async waitLog(
    predicate: (line: LogLine) => boolean,
    timeoutMs: number,
    message: string,
  ): Promise<LogLine> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const line = this.lines.find(predicate);
      if (line) return line;
      if (this.closed) {
        throw new Error(
          `${this.name} exited (${exitText(this.exit!)}): ${message}\n${this.describe()}`,
        );
      }
      if (Date.now() >= deadline) {
        throw new Error(`${this.name}: ${message} (within ${timeoutMs} ms)\n${this.describe()}`);
      }
      await sleep(POLL_MS);
    }
  }

  /** Resolves with the exit; fails when it has not exited within `timeoutMs`. */
  async waitExit(timeoutMs = 15_000): Promise<Exit> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(new Error(`${this.name} did not exit within ${timeoutMs} ms\n${this.describe()}`)),
        timeoutMs,
      );
    });
    try {
      return await Promise.race([this.exited, deadline]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Sends `signal` while it runs (SIGSTOP and SIGCONT freeze and resume it). */
  signal(signal: NodeJS.Signals): void {
    if (this.alive) this.child.kill(signal);
  }

  /** kill -9, and waits until it is gone. */
  async kill(): Promise<Exit> {
    this.signal('SIGKILL');
    return this.waitExit(10_000);
  }

  /** SIGTERM, SIGKILL after `graceMs`. Idempotent. */
  stop(graceMs = 15_000): Promise<void> {
    this.stopping ??= this.alive ? terminate(this.child, this.exited, graceMs) : Promise.resolve();
    return this.stopping;
  }

  /** Its last `n` lines of output, for failure messages. */
  tail(n = 40): string {
    return this.recent.slice(-n).join('\n');
  }

  /** Polls `url` until it answers 200; fails once the process is gone. */
  async waitHttpOk(url: string, timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let last = '';
    for (;;) {
      if (this.exit) {
        throw new Error(
          `${this.name} exited (${exitText(this.exit)}) before ${url} answered 200\n${this.describe()}`,
        );
      }
      try {
        const response = await fetch(url, { signal: AbortSignal.timeout(2_000) });
        await response.body?.cancel();
        if (response.status === 200) return;
        last = `status ${response.status}`;
      } catch (err) {
        last = String(err);
      }
      if (Date.now() >= deadline) {
        throw new Error(
          `${url} did not answer 200 within ${timeoutMs} ms (${last})\n${this.describe()}`,
        );
      }
      await sleep(50);
    }
  }

  describe(): string {
    const state = this.exit ? `exit ${exitText(this.exit)}` : 'running';
    const logs = this.lines.slice(-DESCRIBE_LOG_LINES).map((l) => JSON.stringify(l));
    return (
      `--- ${this.name} (pid ${this.pid}, ${state}) last log lines\n${logs.join('\n')}\n` +
      `--- other output\n${this.other.slice(-DESCRIBE_OTHER_CHARS)}`
    );
  }
}

export interface RoleProcessOptions extends Omit<BubbleProcessOptions, 'args'> {
  role: Role;
  /** Its PORT. */
  port: number;
}

/** `bubble <role>` on a port of its own. */
export class RoleProcess extends BubbleProcess {
  readonly role: Role;
  readonly port: number;

  constructor(options: RoleProcessOptions) {
    super({
      ...options,
      args: [options.role],
      env: { ...options.env, PORT: String(options.port) },
      name: options.name ?? options.role,
    });
    this.role = options.role;
    this.port = options.port;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get wsUrl(): string {
    return `ws://127.0.0.1:${this.port}/v1/ws`;
  }

  /** The node id it announced. */
  get nodeId(): string {
    const line = this.lines.find((l) => typeof l.node === 'string');
    if (!line) throw new Error(`${this.name} has not logged its node id yet`);
    return line.node!;
  }

  /** Its `bubble <role> is listening` line, once it logged it. */
  listening(timeoutMs = 30_000): Promise<LogLine> {
    const msg = `bubble ${this.role} is listening`;
    return this.waitLog((l) => l.msg === msg, timeoutMs, 'never listened');
  }
}

/** Splits a stream into lines as it arrives (a line split across chunks waits for its end). */
function readLines(
  stream: Readable,
  onChunk: (text: string) => void,
  onLine: (text: string) => void,
): void {
  let partial = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    onChunk(chunk);
    const parts = (partial + chunk).split('\n');
    partial = parts.pop()!;
    for (const part of parts) if (part.trim() !== '') onLine(part);
  });
  stream.on('end', () => {
    if (partial.trim() !== '') onLine(partial);
  });
}

function parseLogLine(text: string): LogLine | undefined {
  if (!text.startsWith('{')) return undefined;
  try {
    const value = JSON.parse(text) as unknown;
    return typeof value === 'object' && value !== null ? (value as LogLine) : undefined;
  } catch {
    return undefined;
  }
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
