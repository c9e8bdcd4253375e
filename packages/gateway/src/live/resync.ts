import type { GatewayLink, MissedReason } from '@bubble/badges';
import { ChangeList, type BadgeChange, type BadgeChangeReader } from '@bubble/protocol';
import type { Logger } from 'pino';

/** A re-read of held users' stored states after messages to the gateway may have been lost. */
export interface ResyncEvent {
  reasons: readonly MissedReason[];
  pools: number;
  /** Held users re-read. */
  users: number;
  /** Of them, those whose cached or pending badge the stored state replaced. */
  repaired: number;
}

/** What a re-read needs of the users it repairs (LiveUsers). */
export interface ResyncTarget {
  readonly closed: boolean;
  /** Writes routes and presence of every held user again. */
  renew(): Promise<void>;
  /** The held users hashed into one of `pools`. */
  heldIn(pools: ReadonlySet<number>): string[];
  /** Takes the states as routed changes; returns how many replaced what a user had. */
  deliver(changes: BadgeChangeReader): number;
}

/**
 * Re-reads the stored states of the users held here in the pools whose messages may have been
 * lost, and takes them as routed changes: only a newer state replaces what a user has
 * (isNewerBadge), so a client's versions still only rise within an epoch. Findings that come
 * while a re-read runs are re-read after it; a failed read is tried again after `retryMs`.
 */
export class Resync {
  /** Pools whose held users are to be re-read, and why. */
  private readonly missedPools = new Set<number>();
  private readonly missedReasons = new Set<MissedReason>();
  private running = false;
  private retry: NodeJS.Timeout | undefined;

  constructor(
    private readonly target: ResyncTarget,
    private readonly link: Pick<GatewayLink, 'storedStates'>,
    private readonly log: Logger,
    private readonly retryMs: number,
    private readonly onResync: ((event: ResyncEvent) => void) | undefined,
  ) {}

  /** Whether a re-read runs or is owed: the badges cached here may be behind the store. */
  get pending(): boolean {
    return this.running || this.missedPools.size > 0;
  }

  missed(pools: readonly number[], reason: MissedReason): void {
    for (const pool of pools) this.missedPools.add(pool);
    this.missedReasons.add(reason);
    void this.run();
  }

  close(): void {
    clearTimeout(this.retry);
  }

  private async run(): Promise<void> {
    const { target } = this;
    if (this.running || target.closed) return;
    this.running = true;
    try {
      while (this.missedPools.size > 0 && !target.closed) {
        const pools = new Set(this.missedPools);
        const reasons = [...this.missedReasons];
        this.missedPools.clear();
        this.missedReasons.clear();
        // A loss may be Redis restarted or failed over, which loses routes and presence too:
        // written again first (one batch; losses are rare), so every change after the re-read
        // below is routed here.
        await target.renew();
        const users = target.heldIn(pools);
        let states: BadgeChange[];
        try {
          states = users.length === 0 ? [] : await this.link.storedStates(users);
        } catch (err) {
          for (const pool of pools) this.missedPools.add(pool);
          for (const reason of reasons) this.missedReasons.add(reason);
          this.log.warn({ err, pools: pools.size }, 'could not re-read held users; retrying');
          this.retryLater();
          return;
        }
        const repaired = target.deliver(new ChangeList(states));
        const event = { reasons, pools: pools.size, users: users.length, repaired };
        this.onResync?.(event);
        this.log.warn(
          event,
          "pub/sub messages to this gateway may have been lost: re-read its users' badges",
        );
      }
    } finally {
      this.running = false;
    }
  }

  private retryLater(): void {
    clearTimeout(this.retry);
    this.retry = setTimeout(() => void this.run(), this.retryMs);
    this.retry.unref();
  }
}
