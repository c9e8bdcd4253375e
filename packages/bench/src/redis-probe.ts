import { createHash } from 'node:crypto';
import { loadScripts } from '@bubble/store';
import type { Command, Redis } from 'ioredis';

let scripts: Map<string, string> | undefined;

/**
 * A command's name, with the script named for EVALSHA / EVAL of bubble's own Lua scripts
 * (`evalsha:readEvents`); other scripts (Redlock's) stay `evalsha:other`.
 */
export function commandLabel(command: Command): string {
  const { name } = command;
  if (name !== 'evalsha' && name !== 'eval') return name;
  scripts ??= new Map(
    loadScripts().flatMap(({ name: script, lua }) => [
      [createHash('sha1').update(lua).digest('hex'), script],
      [lua, script],
    ]),
  );
  const first = command.args[0];
  return `${name}:${(typeof first === 'string' && scripts.get(first)) || 'other'}`;
}

/** Commands sent by the clients a tally watches, in total and by name. */
export class CommandTally {
  total = 0;
  readonly byName = new Map<string, number>();

  add(name: string): void {
    this.total++;
    this.byName.set(name, (this.byName.get(name) ?? 0) + 1);
  }

  snapshot(): { total: number; byName: Record<string, number> } {
    return { total: this.total, byName: Object.fromEntries(this.byName) };
  }

  reset(): void {
    this.total = 0;
    this.byName.clear();
  }
}

/**
 * Counts every command `client` sends, pipelined and auto-pipelined ones included (ioredis hands
 * each of them to sendCommand). A command passing through twice (offline queue, reconnect) is
 * counted once.
 */
export function countCommands(client: Redis, tally: CommandTally): void {
  const original = client.sendCommand.bind(client);
  const seen = new WeakSet<Command>();
  client.sendCommand = (command, stream) => {
    if (!seen.has(command)) {
      seen.add(command);
      tally.add(commandLabel(command));
    }
    return original(command, stream);
  };
}

/** `INFO commandstats` as name → calls. Calls made by Lua scripts are counted under their name. */
export function commandCalls(admin: Redis): Promise<Map<string, number>> {
  return commandStat(admin, 'calls');
}

/** `INFO commandstats` as name → microseconds spent (a script's calls inside its own figure too). */
export function commandUsec(admin: Redis): Promise<Map<string, number>> {
  return commandStat(admin, 'usec');
}

async function commandStat(admin: Redis, field: 'calls' | 'usec'): Promise<Map<string, number>> {
  const text = await admin.info('commandstats');
  const stat = new Map<string, number>();
  for (const match of text.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) {
    stat.set(match[1]!, Number(field === 'calls' ? match[2] : match[3]));
  }
  return stat;
}

/** Seconds of CPU (user + system) the redis-server process used so far. */
export async function redisCpuSeconds(admin: Redis): Promise<number> {
  const text = await admin.info('cpu');
  const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(text)?.[1]);
  return field('used_cpu_user') + field('used_cpu_sys');
}

/** What the server executed between two snapshots; the probe's own INFO calls left out. */
export function callsBetween(
  before: Map<string, number>,
  after: Map<string, number>,
): Map<string, number> {
  const delta = new Map<string, number>();
  for (const [name, calls] of after) {
    if (name === 'info') continue;
    const n = calls - (before.get(name) ?? 0);
    if (n > 0) delta.set(name, n);
  }
  return delta;
}

/** Names among `names` whose COMMAND INFO flags include `write`. */
export async function writeCommands(admin: Redis, names: Iterable<string>): Promise<Set<string>> {
  const writes = new Set<string>();
  for (const name of names) {
    const info = (await admin.call('COMMAND', 'INFO', name)) as unknown[];
    const entry = info[0] as unknown[] | null;
    const flags = (entry?.[2] as string[] | undefined) ?? [];
    if (flags.includes('write')) writes.add(name);
  }
  return writes;
}

export function sum(values: Iterable<number>): number {
  let total = 0;
  for (const v of values) total += v;
  return total;
}
