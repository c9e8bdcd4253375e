import { fork } from 'node:child_process';
import { keepStringPrototypeFast } from '@bubble/store';
import { killOnExit } from './children.js';

/**
 * Load drivers (WebSocket clients, pollers) run in child processes of their own, so their
 * event loop is not the bench's and several can share the load. The parent calls named
 * commands; the child answers each call, and may send log lines.
 */

interface CallMessage {
  id: number;
  cmd: string;
  args: unknown;
}

type ReplyMessage =
  { id: number; result: unknown } | { id: number; error: string } | { log: string };

export interface DriverHandle {
  readonly pid: number;
  /** Runs `cmd` in the child and resolves with its result. */
  call<T>(cmd: string, args?: unknown): Promise<T>;
  /** Runs `cmd` in the child without waiting for, or getting, an answer. */
  post(cmd: string, args?: unknown): void;
  /** Ends the child (it gets a `stop` call first, then SIGKILL after `graceMs`). */
  stop(graceMs?: number): Promise<void>;
}

/** Forks `module` (a file calling serveDriver) with structured-clone IPC (typed arrays pass). */
export function forkDriver(module: URL, name: string, log: (line: string) => void): DriverHandle {
  const child = fork(module, [], {
    execArgv: [],
    serialization: 'advanced',
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  killOnExit(child);
  let nextId = 1;
  const waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  let exit: string | null = null;
  const exited = new Promise<void>((resolve) => {
    child.once('exit', (code, signal) => {
      exit = signal ?? String(code);
      for (const { reject } of waiting.values())
        reject(new Error(`${name} exited (${exit}) during a call`));
      waiting.clear();
      resolve();
    });
  });
  child.on('message', (message: ReplyMessage) => {
    if ('log' in message) {
      log(`${name}: ${message.log}`);
      return;
    }
    const pending = waiting.get(message.id);
    if (!pending) return;
    waiting.delete(message.id);
    if ('error' in message) pending.reject(new Error(`${name}: ${message.error}`));
    else pending.resolve(message.result);
  });
  let stopping: Promise<void> | undefined;
  const call = <T>(cmd: string, args?: unknown): Promise<T> => {
    if (exit !== null) return Promise.reject(new Error(`${name} exited (${exit})`));
    const id = nextId++;
    return new Promise<T>((resolve, reject) => {
      waiting.set(id, { resolve: resolve as (v: unknown) => void, reject });
      child.send({ id, cmd, args } satisfies CallMessage);
    });
  };
  return {
    pid: child.pid ?? -1,
    call,
    post(cmd: string, args?: unknown): void {
      if (exit === null) child.send({ id: 0, cmd, args } satisfies CallMessage);
    },
    stop(graceMs = 10_000): Promise<void> {
      stopping ??= (async () => {
        if (exit !== null) return;
        let timer: NodeJS.Timeout | undefined;
        const stopped = call('stop').catch(() => {});
        await Promise.race([
          stopped.then(() => exited),
          new Promise<void>((resolve) => {
            timer = setTimeout(resolve, graceMs);
          }),
        ]);
        clearTimeout(timer);
        if (exit === null) child.kill('SIGKILL');
        await exited;
      })();
      return stopping;
    },
  };
}

/**
 * The child's side: answers calls with `handlers` (a `stop` handler runs before the child
 * exits), and ends the child when the parent goes away.
 */
export function serveDriver(
  handlers: Record<string, (args: never) => unknown>,
): (line: string) => void {
  // A driver loads ioredis too (the peers of push-peers, the harness): it gets the repair every
  // bubble process gets, so the bare senders it is compared with run as fast as they can.
  keepStringPrototypeFast();
  const send = (message: ReplyMessage) => {
    if (process.connected) process.send!(message);
  };
  process.on('message', (message: CallMessage) => {
    void (async () => {
      try {
        const handler = handlers[message.cmd];
        if (!handler && message.cmd !== 'stop') throw new Error(`unknown command ${message.cmd}`);
        const result = handler ? await handler(message.args as never) : undefined;
        if (message.id !== 0) send({ id: message.id, result });
        if (message.cmd === 'stop') setImmediate(() => process.exit(0));
      } catch (err) {
        if (message.id !== 0) send({ id: message.id, error: String(err) });
        else send({ log: `${message.cmd} failed: ${String(err)}` });
      }
    })();
  });
  process.on('disconnect', () => process.exit(0));
  return (line: string) => send({ log: line });
}
