import { usersByPool } from '@bubble/protocol';
import type { CommandCounter } from '../redis/command-counter.js';
import type { RedisClient } from '../redis/connect.js';
import type { RedisKeys } from '../redis/keys.js';
import { listen, subscriberConnection } from '../redis/pubsub-listener.js';
import { scripts, type ScriptRunner } from '../redis/scripts.js';

/**
 * Tells the gateways holding users that their conversation lists may have changed: one message
 * per pool to each gateway's list channel, through the routes (signalLists-1.lua).
 */
export class RedisListSignals {
  private readonly run: ScriptRunner;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: RedisKeys,
    /** SPUBLISH and SSUBSCRIBE on a Redis Cluster (RedisFencedBadgesOptions.sharded). */
    private readonly sharded: boolean,
    private readonly commands: CommandCounter | undefined,
  ) {
    this.run = scripts(redis);
  }

  async signalLists(users: readonly string[]): Promise<void> {
    const { keys } = this;
    const publish = this.sharded ? 'SPUBLISH' : 'PUBLISH';
    await Promise.all(
      [...usersByPool(users, keys.pools)].map(([pool, list]) =>
        this.run.signalLists([keys.routes(pool)], [keys.listChannelPrefix(pool), publish, ...list]),
      ),
    );
  }

  async subscribeListSignals(
    gateway: string,
    handler: (users: string[]) => void,
    onLost?: () => void,
  ): Promise<() => Promise<void>> {
    const { keys } = this;
    const channels = Array.from(
      { length: keys.pools },
      (_, pool) => `${keys.listChannelPrefix(pool)}${gateway}`,
    );
    const subscriber = subscriberConnection(this.redis, this.sharded, `bubble-lists:${gateway}`);
    // A plain connection says when it is back (ioredis subscribes again by itself); a Cluster's
    // sharded subscribers do not, and the gateway's slow refresh covers what they lose.
    let dropped = false;
    const onClose = () => {
      dropped = true;
    };
    const onReady = () => {
      if (!dropped) return;
      dropped = false;
      onLost?.();
    };
    subscriber.on('close', onClose);
    subscriber.on('ready', onReady);
    const stop = await listen({
      subscriber,
      channels,
      sharded: this.sharded,
      onMessage: (_channel, message) => handler(message.split('\n')),
      commands: this.commands,
    });
    return async () => {
      subscriber.off('close', onClose);
      subscriber.off('ready', onReady);
      await stop();
    };
  }
}
