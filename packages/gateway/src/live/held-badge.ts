import type { BadgeService } from '@bubble/badges';
import type { Badge } from '@bubble/protocol';
import type { BadgeChange } from '@bubble/store';

/** What makes a pushed state's frame: the badges layer. */
export type BadgeFramer = Pick<BadgeService, 'frameOf'>;

/**
 * A user's badge as a gateway holds it and hands it to their sockets, framed once for all of
 * them. A pushed state is framed at once (every socket sends it) and made into an object only
 * when a poll or a watched list asks, from the frame, which is its JSON to the byte
 * (badgeFrameText): nothing of the routed message, which the change's strings point into, is
 * kept past the push. Never changed once made.
 */
export class HeldBadge {
  private made: Badge | null;
  private text: string | null;

  private constructor(
    readonly epoch: string,
    readonly version: number,
    made: Badge | null,
    text: string | null,
  ) {
    this.made = made;
    this.text = text;
  }

  /** A badge computed here (a cold start, a read). */
  static of(badge: Badge): HeldBadge {
    return new HeldBadge(badge.epoch, badge.version, badge, null);
  }

  /** A state published by a core or a read elsewhere, routed to this gateway. */
  static pushed(change: BadgeChange, framer: BadgeFramer): HeldBadge {
    return new HeldBadge(change.epoch, change.version, null, framer.frameOf(change));
  }

  get badge(): Badge {
    this.made ??= (JSON.parse(this.text!) as { badge: Badge }).badge;
    return this.made;
  }

  /** The `badge` frame's text. */
  get frame(): string {
    this.text ??= JSON.stringify({ type: 'badge', badge: this.made });
    return this.text;
  }
}
