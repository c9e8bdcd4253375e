import { Cluster, Command, type Redis } from 'ioredis';
import type { RedisClient } from './connect.js';
import { evalInsteadOfEvalsha } from './resp-writer.js';

/**
 * Everything the store does with ioredis beyond its documented API, here and in
 * command-counter.ts, checked against ioredis 6.0 (the pinned version; recheck these when it
 * moves):
 *
 * - A Command subclass whose toWritable() returns bytes encoded by the caller, sent with
 *   sendCommand(). ioredis writes whatever toWritable() returns and routes the command (on a
 *   Cluster, by the keys among its args) as usual.
 * - The NOSCRIPT fallback for such a command (defineCommand's, which does the same, needs the
 *   arguments as values).
 * - Counting the commands written on a connection (command-counter.ts).
 */

/** An encoded EVALSHA or EVAL: `keys` are given for routing, `bytes` are what is sent. */
class EncodedCommand extends Command {
  constructor(
    sha: string,
    keys: readonly string[],
    private readonly bytes: Buffer,
  ) {
    super('evalsha', [sha, keys.length, ...keys], { replyEncoding: 'utf8' });
  }

  override toWritable(): Buffer {
    return this.bytes;
  }
}

interface EncodedScript {
  sha: string;
  lua: string;
}

/**
 * Sends an encoded EVALSHA of `script`; where the server does not have the script (a restart,
 * a failover, SCRIPT FLUSH), sends it once more as EVAL, which also loads it. `bodyAt` is
 * where the key count starts in `evalsha`. Resolves with the reply, decoded as UTF-8 text.
 */
export async function sendEncodedScript(
  client: RedisClient,
  script: EncodedScript,
  keys: readonly string[],
  evalsha: Buffer,
  bodyAt: number,
): Promise<unknown> {
  try {
    return await send(client, script.sha, keys, evalsha);
  } catch (error) {
    if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
    return send(client, script.sha, keys, evalInsteadOfEvalsha(evalsha, bodyAt, script.lua));
  }
}

function send(
  client: RedisClient,
  sha: string,
  keys: readonly string[],
  bytes: Buffer,
): Promise<unknown> {
  const command = new EncodedCommand(sha, keys, bytes);
  // sendCommand answers with command.promise itself (or a traced copy), which the caller awaits.
  void client.sendCommand(command);
  return command.promise;
}

/**
 * A Cluster that applies every MOVED reply to its slot map. ioredis follows a MOVED itself for
 * a single command, and for a pipeline only when all its errors are the same; an auto-pipelined
 * batch of several slots gets as many MOVED replies as slots, so its commands fail and the map
 * stays stale until the next refresh, which after a failover can read a node's stale view for
 * seconds (a core's sweeps then failed for 2 s, past a short lease). Each MOVED here moves its
 * slot as ioredis' own pipeline handler does, and asks for a refresh: the next command goes to
 * the new owner.
 */
export function applyMovedReplies(cluster: Cluster): void {
  const learning = new WeakSet<Redis>();
  const learn = (node: Redis): void => {
    if (learning.has(node)) return;
    learning.add(node);
    const sendCommand = node.sendCommand;
    node.sendCommand = function (this: Redis, ...args: Parameters<Redis['sendCommand']>) {
      const reply = sendCommand.apply(this, args);
      args[0].promise.catch((error: unknown) => {
        const moved = error instanceof Error ? MOVED.exec(error.message) : null;
        if (moved) moveSlot(cluster, Number(moved[1]), moved[2]!);
      });
      return reply;
    };
  };
  for (const node of cluster.nodes('all')) learn(node);
  cluster.on('+node', learn);
}

const MOVED = /^MOVED (\d+) (\S+)$/;

function moveSlot(cluster: Cluster, slot: number, owner: string): void {
  const map = cluster as unknown as {
    slots: string[][];
    _groupsBySlot: (number | undefined)[];
    _groupsIds: Record<string, number>;
  };
  if (map.slots[slot]?.[0] === owner) return;
  map.slots[slot] = [owner];
  map._groupsBySlot[slot] = map._groupsIds[owner];
  cluster.refreshSlotsCache();
}
