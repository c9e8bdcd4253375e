import { Cluster } from 'ioredis';
import type { RedisClient } from './connect.js';
import type { CommandCounter } from './command-counter.js';

export interface ListenOptions {
  /** The connection the subscription holds, of its own: closed with the subscription. */
  subscriber: RedisClient;
  channels: readonly string[];
  /**
   * SSUBSCRIBE (Redis ≥ 7, heard from SPUBLISH) instead of SUBSCRIBE: on a Redis Cluster a
   * message then stays on its channel's shard instead of being broadcast to every node.
   */
  sharded: boolean;
  onMessage: (channel: string, message: string) => void;
  /** Counts the subscriber's commands with the store's. */
  commands?: CommandCounter;
}

/**
 * Subscribes `subscriber` to `channels`; resolves once the server confirmed it (later messages
 * reach onMessage). The returned function closes the connection, once however often called.
 */
export async function listen(options: ListenOptions): Promise<() => Promise<void>> {
  const { subscriber, channels, sharded } = options;
  options.commands?.watch(subscriber);
  subscriber.on(sharded ? 'smessage' : 'message', options.onMessage);
  try {
    if (sharded) {
      // Each channel may hash to a slot of its own; SSUBSCRIBE takes one slot per call.
      await Promise.all(channels.map((channel) => subscriber.ssubscribe(channel)));
    } else if (channels.length > 0) {
      await subscriber.subscribe(...channels);
    }
  } catch (error) {
    subscriber.disconnect();
    throw error;
  }
  let closing: Promise<void> | undefined;
  return () =>
    (closing ??= subscriber.quit().then(
      () => undefined,
      () => subscriber.disconnect(),
    ));
}

/**
 * A connection for listen(), like `client`. Auto-pipelining is off: it would batch SSUBSCRIBE
 * onto a command connection. On a Cluster with `sharded`, ioredis' sharded subscriber group
 * keeps one connection per shard. `name` is the connection's CLIENT SETNAME (CLIENT LIST shows
 * whose subscriber it is), else `client`'s.
 */
export function subscriberConnection(
  client: RedisClient,
  sharded: boolean,
  name?: string,
): RedisClient {
  if (client instanceof Cluster) {
    const redisOptions = { ...client.options.redisOptions, ...(name && { connectionName: name }) };
    return client.duplicate([], {
      enableAutoPipelining: false,
      shardedSubscribers: sharded,
      redisOptions,
    });
  }
  return client.duplicate({ enableAutoPipelining: false, ...(name && { connectionName: name }) });
}
