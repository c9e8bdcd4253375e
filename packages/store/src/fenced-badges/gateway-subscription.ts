import { PublishedChanges, type BadgeChangeReader } from '@bubble/protocol';
import { Redis } from 'ioredis';
import type { MissedMessages, MissedReason } from './fenced-badges.js';
import type { RedisClient } from '../redis/connect.js';
import type { CommandCounter } from '../redis/command-counter.js';
import type { RedisKeys } from '../redis/keys.js';
import { listen, subscriberConnection } from '../redis/pubsub-listener.js';

export interface GatewaySubscriptionOptions {
  /** The store's command connection: reads the counts, and removes them on close. */
  client: RedisClient;
  keys: RedisKeys;
  gateway: string;
  sharded: boolean;
  commands?: CommandCounter;
  onChanges: (changes: BadgeChangeReader) => void;
  missed?: MissedMessages;
}

/**
 * A gateway's subscription to its channel of every pool, finding the messages it lost.
 * saveBadges-8.lua numbers the messages of each channel (the pool's `sent` hash counts them)
 * and writes the number on the message's first line. The subscription keeps, per pool, the
 * highest number heard, and reports a pool as missed when
 * - a message's number skips (the ones between were lost);
 * - the subscriber connection comes back (every pool: what was published while it was down is
 *   lost; ioredis subscribes again by itself, and the PING after it answers once it has);
 * - a check, every `checkEveryMs`, reads a stored count above the number heard once a PING on
 *   the subscriber connection, sent after the read, has come back: Redis writes a connection's
 *   messages and replies in order, so what was counted before the read has arrived by then.
 *   On a Cluster (sharded subscribers it cannot ping) a count must stay unheard from one check
 *   to the next; a count below the number heard before the read (the count was lost) is
 *   reported too.
 * The reads cost one HGET per pool a check, whatever the number of users the gateway holds.
 */
export class GatewaySubscription {
  private readonly options: GatewaySubscriptionOptions;
  private readonly subscriber: RedisClient;
  /**
   * The subscriber when it is one plain connection, which tells of its reconnection and answers
   * a PING; null on a Cluster, whose sharded subscribers do neither.
   */
  private readonly plain: Redis | null;
  private readonly pools: number[];
  private readonly poolOfChannel: Map<string, number>;
  private readonly heard: Float64Array;
  /** The counts the previous check read (a Cluster compares the numbers heard with them). */
  private previous: Float64Array | null = null;
  /** Whether `heard` can be compared with the stored counts (false while reconnecting). */
  private counted = false;
  /** Moves on when the subscriber connection closes: a check begun before it is void. */
  private connection = 0;
  private work: Promise<void> = Promise.resolve();
  private checkQueued = false;
  private timer: NodeJS.Timeout | undefined;
  private stop: (() => Promise<void>) | undefined;
  private closing: Promise<void> | undefined;

  constructor(options: GatewaySubscriptionOptions) {
    this.options = options;
    const { client, keys, gateway, sharded } = options;
    this.subscriber = subscriberConnection(client, sharded, `bubble-sub:${gateway}`);
    this.plain = this.subscriber instanceof Redis ? this.subscriber : null;
    this.pools = Array.from({ length: keys.pools }, (_, pool) => pool);
    this.poolOfChannel = new Map(
      this.pools.map((pool) => [keys.gatewayChannel(pool, gateway), pool]),
    );
    this.heard = new Float64Array(keys.pools);
  }

  /** Resolves once subscribed (and, with `missed`, once the counts are read). */
  async start(): Promise<() => Promise<void>> {
    const { missed, sharded, commands } = this.options;
    this.stop = await listen({
      subscriber: this.subscriber,
      channels: [...this.poolOfChannel.keys()],
      sharded,
      onMessage: this.onMessage,
      commands,
    });
    if (missed) {
      this.subscriber.on('close', this.onClose);
      // Only a plain connection tells of its reconnection; a Cluster's checks find the loss.
      this.plain?.on('ready', this.onReconnected);
      await this.serially(() => this.recount(null));
      if (missed.checkEveryMs > 0) {
        this.timer = setInterval(this.onTimer, missed.checkEveryMs);
        this.timer.unref();
      }
    }
    return () => this.close();
  }

  private readonly onMessage = (channel: string, message: string): void => {
    const pool = this.poolOfChannel.get(channel);
    if (pool === undefined) return;
    this.options.onChanges(new PublishedChanges(message));
    if (!this.options.missed) return;
    const lineEnd = message.indexOf('\n');
    const header = lineEnd < 0 ? message : message.slice(0, lineEnd);
    const space = header.indexOf(' ');
    if (space < 0) return;
    const number = Number(header.slice(space + 1));
    const heard = this.heard[pool]!;
    if (number > heard) this.heard[pool] = number;
    if (this.counted && number > heard + 1) this.report([pool], 'gap');
  };

  private readonly onClose = (): void => {
    this.counted = false;
    this.connection++;
  };

  private readonly onReconnected = (): void => {
    void this.serially(() => this.recount('reconnected'));
  };

  private readonly onTimer = (): void => {
    if (this.checkQueued) return;
    this.checkQueued = true;
    void this.serially(async () => {
      this.checkQueued = false;
      await (this.counted ? this.check() : this.recount('check'));
    });
  };

  /** Counts and checks one at a time: both set `heard`. */
  private serially(task: () => Promise<void>): Promise<void> {
    this.work = this.work.then(async () => {
      if (this.closing) return;
      try {
        await task();
      } catch (error) {
        this.options.missed?.onCheckFailed?.(error);
        return;
      }
      this.options.missed?.onCheckPassed?.();
    });
    return this.work;
  }

  /**
   * Takes the stored counts as heard once the subscription is live, and reports every pool
   * (`reason`), since what was published before may be lost. `null`: the first count, when the
   * gateway holds nobody yet.
   */
  private async recount(reason: MissedReason | null): Promise<void> {
    const connection = this.connection;
    try {
      await this.pinged();
      this.heard.fill(0);
      const stored = await this.storedCounts();
      for (const pool of this.pools) {
        this.heard[pool] = Math.max(this.heard[pool]!, stored[pool]!);
      }
      this.previous = stored;
      this.counted = connection === this.connection;
    } finally {
      if (reason) this.report(this.pools, reason);
    }
  }

  private async check(): Promise<void> {
    const connection = this.connection;
    const before = Float64Array.from(this.heard);
    const stored = await this.storedCounts();
    const pinged = await this.pinged();
    if (connection !== this.connection || !this.counted) return;
    const previous = this.previous;
    this.previous = stored;
    const missed: number[] = [];
    for (const pool of this.pools) {
      const count = stored[pool]!;
      const heard = this.heard[pool]!;
      const lost = before[pool]! > count;
      const unheard = pinged ? heard < count : previous !== null && heard < previous[pool]!;
      if (!lost && !unheard) continue;
      missed.push(pool);
      this.heard[pool] = lost ? count : Math.max(heard, count);
    }
    if (missed.length > 0) this.report(missed, 'check');
  }

  /**
   * A PING on the subscriber connection, answered after every message and subscription sent
   * before it; false on a Cluster, whose sharded subscribers are not reachable this way.
   */
  private async pinged(): Promise<boolean> {
    if (!this.plain) return false;
    await this.plain.ping();
    return true;
  }

  private async storedCounts(): Promise<Float64Array> {
    const { client, keys, gateway } = this.options;
    const counts = await Promise.all(
      this.pools.map((pool) => client.hget(keys.sentToGateways(pool), gateway)),
    );
    return Float64Array.from(counts, (count) => Number(count ?? 0));
  }

  private report(pools: readonly number[], reason: MissedReason): void {
    if (!this.closing) this.options.missed?.onMissed(pools, reason);
  }

  private close(): Promise<void> {
    return (this.closing ??= (async () => {
      clearInterval(this.timer);
      this.subscriber.off('close', this.onClose);
      this.subscriber.off('ready', this.onReconnected);
      await this.stop?.();
      // The gateway's counts go with it (a gateway that dies leaves one field per pool).
      const { client, keys, gateway } = this.options;
      await Promise.all(
        this.pools.map((pool) => client.hdel(keys.sentToGateways(pool), gateway)),
      ).catch(() => undefined);
    })());
  }
}
