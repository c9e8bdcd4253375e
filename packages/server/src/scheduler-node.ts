import type { NodeInfo } from '@bubble/protocol';
import type { BubbleStore } from '@bubble/store';
import type { Logger } from 'pino';
import { assignPools, samePlan } from './pool-assigner.js';
import { startTicker } from './ticker.js';

const FORGET_GATEWAYS_EVERY_MS = 60_000;

export interface SchedulerNodeOptions {
  id: string;
  store: BubbleStore;
  logger: Logger;
  /** The leader lease (also how long a silent core still counts as live). */
  leaseMs: number;
  /** BUBBLE_TICK: sweep period in ms or a node-cron expression. */
  tick: string;
  url?: string;
  /**
   * The inactive-user job: run by the leader on `schedule` (ms or a node-cron expression);
   * `run` drops one bounded batch and returns how many users it dropped.
   */
  inactiveJob?: { schedule: string; run: () => Promise<number> };
}

/**
 * bubble-server: any number run, one leads (a lease in the store). The leader keeps the
 * pool → core assignment balanced over the live cores and ticks the sweeps.
 */
export class SchedulerNode {
  private readonly log: Logger;
  private leading = false;
  private unowned = 0;
  private tickSeq = 0;
  private timer: NodeJS.Timeout | undefined;
  private stopTicker: (() => Promise<void>) | undefined;
  private stopInactiveJob: (() => Promise<void>) | undefined;
  private inactiveRun: Promise<void> | null = null;
  private nextGatewaySweepAt = 0;
  private startedAt = 0;
  private closing: Promise<void> | undefined;
  private round: Promise<void> = Promise.resolve();

  constructor(private readonly options: SchedulerNodeOptions) {
    this.log = options.logger.child({ module: 'bubble-server', node: options.id });
  }

  get isLeader(): boolean {
    return this.leading;
  }

  /** Pools left without a live core by the latest rebalance (all of them while none runs). */
  get poolsUnowned(): number {
    return this.leading ? this.unowned : 0;
  }

  async start(): Promise<void> {
    this.startedAt = Date.now();
    await this.lead();
    this.timer = setInterval(
      () => {
        this.round = this.round.then(() => this.lead());
      },
      Math.max(100, Math.floor(this.options.leaseMs / 6)),
    );
    this.timer.unref();
    this.stopTicker = startTicker(this.options.tick, () => void this.tick());
    const job = this.options.inactiveJob;
    if (job) this.stopInactiveJob = startTicker(job.schedule, () => this.dropInactive(job.run));
    this.log.info(
      { leaseMs: this.options.leaseMs, tick: this.options.tick },
      'bubble-server started',
    );
  }

  async close(): Promise<void> {
    this.closing ??= (async () => {
      clearInterval(this.timer);
      await this.stopTicker?.();
      await this.stopInactiveJob?.();
      await this.inactiveRun;
      await this.round;
      const { store, id } = this.options;
      // Best effort both: the leadership and the node's entry expire with their leases.
      if (this.leading)
        await store.coordination
          .resign(id)
          .catch((err: unknown) => this.log.warn({ err }, 'could not resign the leadership'));
      this.leading = false;
      await store.coordination
        .removeNode(id)
        .catch((err: unknown) => this.log.warn({ err }, 'could not leave the node list'));
      this.log.info('bubble-server stopped');
    })();
    return this.closing;
  }

  /** One round: hold (or try to take) the lease; while leading, rebalance. */
  private async lead(): Promise<void> {
    if (this.closing) return;
    const { store, id, leaseMs, url } = this.options;
    try {
      const now = Date.now();
      await store.coordination.heartbeat(
        { id, role: 'server', url, startedAt: this.startedAt, seenAt: now },
        leaseMs,
      );
      const leading = await store.coordination.tryLead(id, leaseMs);
      if (leading !== this.leading)
        this.log.info({ leading }, leading ? 'leading' : 'no longer leading');
      this.leading = leading;
      if (leading) await this.rebalance();
    } catch (err) {
      this.leading = false;
      this.log.warn({ err }, 'leader round failed');
    }
  }

  private async rebalance(): Promise<void> {
    const { store } = this.options;
    const nodes = await store.coordination.liveNodes();
    await this.forgetDeadGateways(nodes);
    const cores = nodes.filter((n) => n.role === 'core').map((n) => n.id);
    const current = await store.coordination.assignment();
    const previous = current?.owners ?? [];
    const owners = assignPools(previous, cores, store.pools);
    this.unowned = owners.filter((owner) => owner === null).length;
    if (current && samePlan(previous, owners)) return;
    const moved = owners.filter((owner, pool) => owner !== (previous[pool] ?? null)).length;
    await store.coordination.setAssignment({ generation: (current?.generation ?? 0) + 1, owners });
    this.log.info({ cores, moved, generation: (current?.generation ?? 0) + 1 }, 'pools reassigned');
  }

  /**
   * At most once a minute, drops the message counts of gateways no longer live: a gateway that
   * died leaves one per pool. A live gateway's count dropped by mistake (its heartbeat late) costs
   * it one re-read of its users, as a lost message would.
   */
  private async forgetDeadGateways(nodes: readonly NodeInfo[]): Promise<void> {
    const now = Date.now();
    if (now < this.nextGatewaySweepAt) return;
    this.nextGatewaySweepAt = now + FORGET_GATEWAYS_EVERY_MS;
    try {
      const live = new Set(nodes.map((n) => n.id));
      const forgotten = await this.options.store.fencedBadges.forgetGateways(live);
      if (forgotten > 0) this.log.info({ forgotten }, "forgot dead gateways' message counts");
    } catch (err) {
      this.log.warn({ err }, "could not forget dead gateways' message counts");
    }
  }

  /** One bounded batch per run; a run still going when the next is due skips that one. */
  private dropInactive(run: () => Promise<number>): void {
    if (!this.leading || this.closing || this.inactiveRun) return;
    this.inactiveRun = run()
      .then((dropped) => {
        if (dropped > 0) {
          this.log.info({ dropped }, 'lifecycle job: dropped inactive users, expired badge states');
        }
      })
      .catch((err: unknown) => this.log.warn({ err }, 'inactive-user job failed'))
      .finally(() => {
        this.inactiveRun = null;
      });
  }

  private async tick(): Promise<void> {
    if (!this.leading || this.closing) return;
    try {
      await this.options.store.coordination.publishTick(++this.tickSeq);
    } catch (err) {
      this.log.warn({ err }, 'tick not published');
    }
  }
}
