import type { NodeInfo, SweepReport } from '@bubble/protocol';
import type { ChainableCommander } from 'ioredis';
import type { Assignment, Coordination } from './coordination.js';
import { duplicateClient, type RedisClient } from '../redis/connect.js';
import type { CommandCounter } from '../redis/command-counter.js';
import type { RedisKeys } from '../redis/keys.js';
import { listen } from '../redis/pubsub-listener.js';
import { scripts, type ScriptRunner } from '../redis/scripts.js';

export interface RedisCoordinationOptions {
  /** Shared command connection; not closed by this class. */
  client: RedisClient;
  keys: RedisKeys;
  /**
   * Opens the dedicated connection each onTick subscription needs; default `client.duplicate()`.
   * On Redis Cluster a plain SUBSCRIBE on any node hears every PUBLISH, so a duplicate of the
   * Cluster client serves as well.
   */
  subscriber?: () => RedisClient;
  /** Counts the commands of the subscription connections with the store's. */
  commands?: CommandCounter;
}

/** Coordination through the {g} keys of one Redis (or one Redis Cluster slot). */
export class RedisCoordination implements Coordination {
  private readonly redis: RedisClient;
  private readonly run: ScriptRunner;
  private readonly keys: RedisKeys;
  private readonly openSubscriber: () => RedisClient;
  private readonly commands: CommandCounter | undefined;

  constructor(options: RedisCoordinationOptions) {
    this.redis = options.client;
    this.run = scripts(options.client);
    this.keys = options.keys;
    this.commands = options.commands;
    const { client } = options;
    this.openSubscriber = options.subscriber ?? (() => duplicateClient(client));
  }

  async tryLead(node: string, ttlMs: number): Promise<boolean> {
    // The holder renews far more often than a free lease is taken: try renewing first.
    if ((await this.run.renewLeader([this.keys.leader()], [node, ttlMs])) === 1) return true;
    return (await this.redis.set(this.keys.leader(), node, 'PX', ttlMs, 'NX')) === 'OK';
  }

  async resign(node: string): Promise<void> {
    await this.run.resignLeader([this.keys.leader()], [node]);
  }

  async leader(): Promise<string | null> {
    return this.redis.get(this.keys.leader());
  }

  /** Live for `ttlMs` from the server's now (announceNode-2.lua), whatever `seenAt` says. */
  async heartbeat(node: NodeInfo, ttlMs: number): Promise<void> {
    await this.run.announceNode(
      [this.keys.nodesAlive(), this.keys.nodesInfo()],
      [node.id, ttlMs, JSON.stringify(node)],
    );
  }

  async removeNode(node: string): Promise<void> {
    await execAll(
      this.redis.multi().zrem(this.keys.nodesAlive(), node).hdel(this.keys.nodesInfo(), node),
    );
  }

  async liveNodes(): Promise<NodeInfo[]> {
    const infos = await this.run.listNodes([this.keys.nodesAlive(), this.keys.nodesInfo()], []);
    const nodes: NodeInfo[] = [];
    for (const json of infos) if (json) nodes.push(JSON.parse(json) as NodeInfo);
    return nodes.sort((a, b) => compare(a.id, b.id));
  }

  async setAssignment(assignment: Assignment): Promise<void> {
    await this.redis.set(this.keys.assignment(), JSON.stringify(assignment));
  }

  async assignment(): Promise<Assignment | null> {
    const json = await this.redis.get(this.keys.assignment());
    return json === null ? null : (JSON.parse(json) as Assignment);
  }

  /**
   * A new owner's token (nextFence-2.lua): larger than every token issued before, also after
   * Redis lost the fence key. The pool's touched set starts over with it: the new owner's
   * beliefs all come from loads after this, so no entry before it can concern them.
   */
  async nextFence(pool: number): Promise<number> {
    return Number(await this.run.nextFence([this.keys.fence(pool), this.keys.touched(pool)], []));
  }

  async currentFence(pool: number): Promise<number> {
    const value = await this.redis.get(this.keys.fence(pool));
    return value === null ? 0 : Number(value);
  }

  async publishTick(seq: number): Promise<void> {
    await this.redis.publish(this.keys.tickChannel(), String(seq));
  }

  /** Resolves once the server confirmed the subscription: later ticks reach the handler. */
  async onTick(handler: (seq: number) => void): Promise<() => Promise<void>> {
    const channel = this.keys.tickChannel();
    return listen({
      subscriber: this.openSubscriber(),
      channels: [channel],
      sharded: false,
      onMessage: (from, message) => {
        if (from === channel) handler(Number(message));
      },
      commands: this.commands,
    });
  }

  async reportSweep(report: SweepReport): Promise<void> {
    await this.redis.hset(this.keys.sweepReports(), report.node, JSON.stringify(report));
  }

  async sweepReports(): Promise<SweepReport[]> {
    const byNode = await this.redis.hgetall(this.keys.sweepReports());
    return Object.values(byNode)
      .map((json) => JSON.parse(json) as SweepReport)
      .sort((a, b) => compare(a.node, b.node));
  }
}

/** EXEC reports a failed command in its results instead of rejecting. */
async function execAll(transaction: ChainableCommander): Promise<void> {
  const results = await transaction.exec();
  for (const [error] of results ?? []) if (error) throw error;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
