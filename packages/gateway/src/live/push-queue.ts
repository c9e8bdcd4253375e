import { HeldBadge, type BadgeFramer } from './held-badge.js';
import type { LiveUser } from './live-user.js';
import { PushRing } from './push-ring.js';

/** Frames written per turn of the event loop; I/O runs between turns. */
const PUSH_SLICE = 512;

/**
 * The users with a pending state, served in the order of their slots, going round, in slices
 * between which I/O runs: a user who changes again before their turn gets one frame with the
 * newest badge (the caller conflates into `pendingCounts`), so when changes come faster than
 * frames can be written the gateway sends fewer frames, never stale ones, and never falls behind.
 */
export class PushQueue {
  /** Changes routed here for users with sockets. */
  routed = 0;
  /** Routed changes replaced by a newer one before their turn came: never sent. */
  superseded = 0;
  /** Badges handed to users' sockets from the queue. */
  pushed = 0;
  private readonly ring = new PushRing<LiveUser>();
  private scheduled = false;

  constructor(
    private readonly framer: BadgeFramer,
    /** Hands a user's badge to their listeners (LiveUsers.offer). */
    private readonly offer: (live: LiveUser, badge: HeldBadge) => void,
    private readonly onPushed: ((waitedSeconds: number) => void) | undefined,
  ) {}

  /** Users waiting for their turn now. */
  get backlog(): number {
    return this.ring.pending;
  }

  /** A newly held user's place in the order. */
  claim(live: LiveUser): number {
    return this.ring.claim(live);
  }

  /** A user no longer held: a pending change of theirs is dropped with their slot. */
  release(live: LiveUser): void {
    live.pendingCounts = null;
    this.ring.release(live.slot);
    live.slot = -1;
  }

  /** A user's first pending state since their last turn: they take their turn in the queue. */
  mark(live: LiveUser): void {
    this.ring.mark(live.slot);
  }

  schedule(): void {
    if (this.scheduled || this.ring.pending === 0) return;
    this.scheduled = true;
    setImmediate(this.slice);
  }

  private readonly slice = (): void => {
    this.scheduled = false;
    const ring = this.ring;
    // A slice's frames are written within a few milliseconds: their wait ends at its start.
    const now = performance.now();
    for (let sent = 0; sent < PUSH_SLICE; sent++) {
      const live = ring.next();
      if (live === undefined) return;
      this.take(live, now);
    }
    this.schedule();
  };

  /** Hands the user's pending state (if any) to their listeners now (`now`: performance.now()). */
  take(live: LiveUser, now = performance.now()): void {
    const counts = live.pendingCounts;
    if (counts === null) return;
    live.pendingCounts = null;
    // Taken out of turn (a poll): its mark goes too. From the ring, it is cleared already.
    this.ring.unmark(live.slot);
    this.pushed++;
    this.onPushed?.((now - live.pendingSince) / 1000);
    const { pendingVersion, pendingComputedAt } = live;
    const badge = HeldBadge.pushed(
      live.stem!,
      pendingVersion,
      pendingComputedAt,
      counts,
      this.framer,
    );
    this.offer(live, badge);
  }
}
