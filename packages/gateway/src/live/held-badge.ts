import type { BadgeService } from '@bubble/badges';
import { decodeCounts, isAscii, type Badge, type FrameStem } from '@bubble/protocol';

/** What makes a pushed state's frame and, when a poll asks, its object: the badges layer. */
export type BadgeFramer = Pick<BadgeService, 'frameOf' | 'badgeOf'>;

/**
 * A user's badge as a gateway holds it and hands it to their sockets. A pushed state keeps what
 * its frame is written from (the user's stem, shared by their states of one epoch, its version,
 * time and stored counts: nothing of the routed message) and writes its text for each socket
 * it is sent to; the object is made only when a poll or a watched list asks. A badge computed
 * here (a cold start, a read) keeps its object and serializes it once. Never changed once made.
 */
export class HeldBadge {
  private made: Badge | null;
  private text: string | null;
  /**
   * A cold start served it without the feed (the platform's sources endpoint did not answer):
   * polls answer it with `X-Bubble-Stale: 1` until a newer badge replaces it.
   */
  missingFeed = false;

  private constructor(
    readonly epoch: string,
    readonly version: number,
    made: Badge | null,
    private readonly stem: FrameStem | null,
    private readonly computedAt: number,
    private readonly counts: string,
    private readonly framer: BadgeFramer | null,
  ) {
    this.made = made;
    this.text = null;
  }

  /** A badge computed here (a cold start, a read); its time only keeps the field a number. */
  static of(badge: Badge): HeldBadge {
    return new HeldBadge(badge.epoch, badge.version, badge, null, badge.computedAt, '', null);
  }

  /** A state published by a core or a read elsewhere, routed to this gateway. */
  static pushed(
    stem: FrameStem,
    version: number,
    computedAt: number,
    counts: string,
    framer: BadgeFramer,
  ): HeldBadge {
    return new HeldBadge(stem.epoch, version, null, stem, computedAt, counts, framer);
  }

  get badge(): Badge {
    if (this.made === null) {
      const { stem, version, computedAt } = this;
      this.made = this.framer!.badgeOf({
        user: stem!.user,
        epoch: stem!.epoch,
        version,
        computedAt,
        fields: decodeCounts(this.counts),
      });
    }
    return this.made;
  }

  /** The `badge` frame's text. */
  get frame(): string {
    if (this.text !== null) return this.text;
    const { stem } = this;
    if (stem === null) return (this.text = JSON.stringify({ type: 'badge', badge: this.made }));
    return this.framer!.frameOf(stem, this.version, this.computedAt, this.counts);
  }

  /** Whether the frame is ASCII, so its length in bytes is its length (pushes: at no cost). */
  get ascii(): boolean {
    return this.stem === null ? isAscii(this.frame) : this.stem.ascii && isAscii(this.counts);
  }
}
