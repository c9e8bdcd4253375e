import {
  usersByPool,
  type BadgeChange,
  type BadgeChangeReader,
  decodeBadgeState,
  decodeChanges,
} from '@bubble/protocol';
import type { CommandCounter } from '../redis/command-counter.js';
import type { RedisClient } from '../redis/connect.js';
import type { RedisKeys } from '../redis/keys.js';
import { listen, subscriberConnection } from '../redis/pubsub-listener.js';
import type { MissedMessages } from './fenced-badges.js';
import { GatewaySubscription } from './gateway-subscription.js';

/** Users a storedStates HMGET asks for at most. */
const STATES_PER_READ = 1_000;

/**
 * Who receives the published badge changes: a pool's owner on its pool channel, a gateway on
 * its own (GatewaySubscription), and what a gateway re-reads when it missed messages.
 */
export class RedisBadgeSubscriptions {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: RedisKeys,
    /** SPUBLISH and SSUBSCRIBE on a Redis Cluster (RedisFencedBadgesOptions.sharded). */
    private readonly sharded: boolean,
    private readonly commands: CommandCounter | undefined,
  ) {}

  subscribeGateway(
    gateway: string,
    handler: (changes: BadgeChangeReader) => void,
    missed?: MissedMessages,
  ): Promise<() => Promise<void>> {
    return new GatewaySubscription({
      client: this.redis,
      keys: this.keys,
      gateway,
      sharded: this.sharded,
      commands: this.commands,
      onChanges: handler,
      missed,
    }).start();
  }

  async forgetGateways(live: ReadonlySet<string>): Promise<number> {
    const { keys } = this;
    const forgotten = await Promise.all(
      Array.from({ length: keys.pools }, async (_, pool) => {
        const key = keys.sentToGateways(pool);
        const gone = (await this.redis.hkeys(key)).filter((gateway) => !live.has(gateway));
        return gone.length === 0 ? 0 : this.redis.hdel(key, ...gone);
      }),
    );
    return forgotten.reduce((sum, n) => sum + n, 0);
  }

  async storedStates(users: readonly string[]): Promise<BadgeChange[]> {
    const byPool = usersByPool(users, this.keys.pools);
    const states: BadgeChange[] = [];
    await Promise.all(
      [...byPool].map(async ([pool, list]) => {
        for (let first = 0; first < list.length; first += STATES_PER_READ) {
          const chunk = list.slice(first, first + STATES_PER_READ);
          const packed = await this.redis.hmget(this.keys.badges(pool), ...chunk);
          packed.forEach((state, k) => {
            if (state !== null) states.push({ user: chunk[k]!, ...decodeBadgeState(state) });
          });
        }
      }),
    );
    return states;
  }

  /**
   * Listens on a connection of its own. On a Cluster with `sharded`, ioredis' sharded
   * subscriber group keeps one connection per shard; otherwise one connection does.
   */
  async subscribe(
    pools: readonly number[],
    handler: (pool: number, changes: BadgeChange[]) => void,
  ): Promise<() => Promise<void>> {
    const poolOfChannel = new Map(pools.map((pool) => [this.keys.badgeChannel(pool), pool]));
    return this.listen([...poolOfChannel.keys()], (channel, message) => {
      const pool = poolOfChannel.get(channel);
      if (pool !== undefined) handler(pool, decodeChanges(message));
    });
  }

  private listen(
    channels: string[],
    onMessage: (channel: string, message: string) => void,
  ): Promise<() => Promise<void>> {
    return listen({
      subscriber: subscriberConnection(this.redis, this.sharded),
      channels,
      sharded: this.sharded,
      onMessage,
      commands: this.commands,
    });
  }
}
