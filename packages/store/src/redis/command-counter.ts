import { Cluster, type Redis } from 'ioredis';
import type { RedisClient } from './connect.js';

/**
 * Beyond ioredis' documented API, as ioredis-internals.ts (checked against the same pinned
 * version): a wrapper around each watched connection's sendCommand() that sees whether the
 * command went into `commandQueue` (ioredis pushes each command it writes there to match its
 * reply) rather than the offline queue, whose commands come back through sendCommand() when
 * the connection is ready.
 */

/**
 * Commands written to Redis on the connections it watches, each command of a pipeline or
 * transaction counted, a retried one each time it is written again.
 */
export class CommandCounter {
  sent = 0;

  /**
   * Counts what is written on `client` from now on: its connection, or on a Cluster its
   * command connections to the nodes, those it has and those it opens later (not the ones
   * ioredis opens for itself: the slot map, the Cluster's subscriber).
   */
  watch(client: RedisClient): void {
    if (!(client instanceof Cluster)) {
      watchConnection(client, this);
      return;
    }
    for (const node of client.nodes('all')) watchConnection(node, this);
    client.on('+node', (node: Redis) => watchConnection(node, this));
  }
}

/** The counters of each watched connection; its sendCommand is wrapped once. */
const countersOf = new WeakMap<Redis, Set<CommandCounter>>();

function watchConnection(connection: Redis, counter: CommandCounter): void {
  const counters = countersOf.get(connection);
  if (counters) {
    counters.add(counter);
    return;
  }
  const watching = new Set([counter]);
  countersOf.set(connection, watching);
  const sendCommand = connection.sendCommand;
  connection.sendCommand = function (this: Redis, ...args: Parameters<Redis['sendCommand']>) {
    const queued = this.commandQueue.length;
    const reply = sendCommand.apply(this, args);
    if (this.commandQueue.length > queued) for (const each of watching) each.sent++;
    return reply;
  };
}
