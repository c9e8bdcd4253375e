import type { BadgeService } from '@bubble/badges';
import type { Badge } from '@bubble/protocol';
import type { BadgeChange } from '@bubble/store';

/** What makes a pushed state's badge and frame: the badges layer. */
export type BadgeMaker = Pick<BadgeService, 'badgeOf' | 'frameOf'>;

/**
 * A user's badge as a gateway holds it and hands it to their sockets. A pushed state is framed
 * for every socket but read as an object only by a poll or a watched list, so the object and
 * the frame text are each made the first time they are asked for, once for all of the user's
 * sockets. Never changed once made.
 */
export class HeldBadge {
  private made: Badge | null;
  private text: string | null = null;

  private constructor(
    readonly user: string,
    readonly epoch: string,
    readonly version: number,
    made: Badge | null,
    private readonly change: BadgeChange | null,
    private readonly maker: BadgeMaker | null,
  ) {
    this.made = made;
  }

  /** A badge computed here (a cold start, a read). */
  static of(badge: Badge): HeldBadge {
    return new HeldBadge(badge.user, badge.epoch, badge.version, badge, null, null);
  }

  /** A state published by a core or a read elsewhere, routed to this gateway. */
  static pushed(change: BadgeChange, maker: BadgeMaker): HeldBadge {
    return new HeldBadge(change.user, change.epoch, change.version, null, change, maker);
  }

  get badge(): Badge {
    this.made ??= this.maker!.badgeOf(this.change!);
    return this.made;
  }

  /** The `badge` frame's text. */
  get frame(): string {
    this.text ??=
      this.made === null
        ? this.maker!.frameOf(this.change!)
        : JSON.stringify({ type: 'badge', badge: this.made });
    return this.text;
  }
}
