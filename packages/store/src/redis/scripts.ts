import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Cluster, Redis } from 'ioredis';

/** The Lua scripts live in packages/store/lua, the same distance from src/ and dist/. */
const LUA_DIR = fileURLToPath(new URL('../../lua/', import.meta.url));
const SCRIPT_FILE = /^([a-z][A-Za-z]*)-(\d+|n)\.lua$/;

export interface ScriptSource {
  name: string;
  /** Undefined for a `verbNoun-n.lua` script: its caller passes the key count first. */
  numberOfKeys: number | undefined;
  lua: string;
}

/**
 * Reads every `verbNoun-N.lua` file once; N is the number of KEYS the script takes, or `n` when
 * it varies per call (ioredis then takes numkeys as the first argument, as EVALSHA does).
 */
export function loadScripts(dir = LUA_DIR): ScriptSource[] {
  return readdirSync(dir)
    .filter((file) => SCRIPT_FILE.test(file))
    .sort()
    .map((file) => {
      const [, name, keys] = SCRIPT_FILE.exec(file)!;
      return {
        name: name!,
        numberOfKeys: keys === 'n' ? undefined : Number(keys),
        lua: readFileSync(dir + file, 'utf8'),
      };
    });
}

let cached: ScriptSource[] | undefined;
const defined = new WeakSet<Redis | Cluster>();

/**
 * Registers every script on a client through defineCommand (EVALSHA with EVAL fallback).
 * Once per client: every store component built on a shared client calls it.
 */
export function defineScripts(client: Redis | Cluster): void {
  if (defined.has(client)) return;
  defined.add(client);
  cached ??= loadScripts();
  for (const script of cached) {
    client.defineCommand(script.name, { numberOfKeys: script.numberOfKeys, lua: script.lua });
  }
}

/** One script's source and the sha1 EVALSHA names it by, for callers that encode their calls. */
export function scriptSource(name: string): ScriptSource & { sha: string } {
  cached ??= loadScripts();
  const script = cached.find((candidate) => candidate.name === name);
  if (!script) throw new Error(`no script ${name} in ${LUA_DIR}`);
  return { ...script, sha: createHash('sha1').update(script.lua).digest('hex') };
}

/** The script commands as they appear on a client after defineScripts. */
export interface ScriptCommands {
  followAuthor(follows: string, author: string, cap: number): Promise<number>;
  replaceFollows(follows: string, ...authors: string[]): Promise<number>;
  ingestPosts(
    posts: string,
    deleted: string,
    minTs: number,
    ...idTsPairs: (string | number)[]
  ): Promise<number[]>;
  deletePost(
    posts: string,
    deleted: string,
    id: string,
    now: number,
    minTs: number,
  ): Promise<string | null>;
  advanceCursor(cursors: string, field: string, target: number): Promise<string>;
  countPosts(numberOfKeys: number, ...keysAndBounds: (string | number)[]): Promise<number>;
  ingestPostBatch(numberOfKeys: number, ...keysAndArgs: (string | number)[]): Promise<number[]>;
}
