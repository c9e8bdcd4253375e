import { fileURLToPath } from 'node:url';
import type { Cluster, Redis } from 'ioredis';
import { loadScripts } from '../redis/scripts.js';

/** Offline delivery's scripts live in packages/store/lua/webhook; every key shares the tag {w}. */
const WEBHOOK_LUA_DIR = fileURLToPath(new URL('../../lua/webhook/', import.meta.url));

type Arg = string | number;
type Call<Reply> = (keys: readonly string[], args: readonly Arg[]) => Promise<Reply>;

/** Each script of WEBHOOK_LUA_DIR, with its key count and reply (the files' headers say more). */
const WEBHOOK_SCRIPTS = {
  claimBatches: { keys: 3, reply: null as unknown as Array<string | number> },
  deferExpansion: { keys: 5, reply: 0 },
  finishBatch: { keys: 5, reply: 0 },
  releaseDeferred: { keys: 3, reply: 0 },
  scheduleDeliveries: { keys: 10, reply: null as unknown as number[] },
  storeBatch: { keys: 9, reply: 0 },
  takeDue: { keys: 9, reply: null as unknown as string[] },
  trimShown: { keys: 2, reply: 0 },
};

type WebhookScriptName = keyof typeof WEBHOOK_SCRIPTS;
export type WebhookScripts = {
  readonly [Name in WebhookScriptName]: Call<(typeof WEBHOOK_SCRIPTS)[Name]['reply']>;
};

/** Registered under these names, apart from the store's own scripts (redis/scripts.ts). */
const COMMAND_PREFIX = 'webhook_';
const runners = new WeakMap<Redis | Cluster, WebhookScripts>();

/** The webhook scripts as typed functions on `client`, defined on it once. */
export function webhookScripts(client: Redis | Cluster): WebhookScripts {
  let runner = runners.get(client);
  if (runner) return runner;
  const loaded = loadScripts(WEBHOOK_LUA_DIR);
  const entries = (Object.keys(WEBHOOK_SCRIPTS) as WebhookScriptName[]).map((name) => {
    const source = loaded.find((script) => script.name === name);
    if (!source || source.numberOfKeys !== WEBHOOK_SCRIPTS[name].keys) {
      throw new Error(`${WEBHOOK_LUA_DIR} has no ${name}-${WEBHOOK_SCRIPTS[name].keys}.lua`);
    }
    const command = COMMAND_PREFIX + name;
    client.defineCommand(command, { numberOfKeys: source.numberOfKeys, lua: source.lua });
    const defined = (client as unknown as Record<string, (...args: Arg[]) => Promise<unknown>>)[
      command
    ]!.bind(client);
    return [name, (keys: readonly string[], args: readonly Arg[]) => defined(...keys, ...args)];
  });
  if (loaded.length !== entries.length) {
    throw new Error(`${WEBHOOK_LUA_DIR} holds scripts WEBHOOK_SCRIPTS does not name`);
  }
  runner = Object.fromEntries(entries) as WebhookScripts;
  runners.set(client, runner);
  return runner;
}
