import { cursorMigrationSchema, parseInput, type CursorMigrationBody } from '@bubble/protocol';
import type { PoolEvent } from '@bubble/store';
import type { BadgeContext } from './context.js';
import { userPool } from './pool-events.js';

/**
 * `POST /v1/cursors` (docs/api.md): the platform's read positions of its users, so a platform
 * adopting bubble does not show them a week of unread. Each cursor moves as a read moves it,
 * forward only, in one batch per cursor kind (per slot or chunk on Redis, not per user); the
 * cores holding a user are told as after a read (a `cursor` event for the feed, a `marks`
 * event for notices and conversations). A platform call: it never counts as seeing a user.
 */
export class CursorMigration {
  constructor(private readonly ctx: BadgeContext) {}

  /**
   * Validated whole first (a bad part refuses the call and changes nothing). Every entry is
   * accepted, also one with nothing to move; a user named twice has both entries applied.
   */
  async migrate(body: CursorMigrationBody): Promise<{ accepted: number }> {
    const { users } = parseInput(cursorMigrationSchema, body);
    const { store } = this.ctx;
    // The feed cursor is never after now, as a read's `upTo` is clamped.
    const now = this.ctx.clock.now();
    const feedMoves: Array<{ user: string; to: number }> = [];
    const noticeMoves: Array<{ user: string; to: number }> = [];
    const seqMoves: Array<{ conversation: string; user: string; seq: number }> = [];
    for (const { user, feed, notices, conversations } of users) {
      if (feed !== undefined) feedMoves.push({ user, to: Math.min(feed, now) });
      if (notices !== undefined) noticeMoves.push({ user, to: notices });
      // Object.entries keeps a conversation named `__proto__` (JSON.parse makes it an own key).
      for (const [conversation, seq] of Object.entries(conversations ?? {})) {
        seqMoves.push({ conversation, user, seq });
      }
    }
    const [readAts, seens, readSeqs] = await Promise.all([
      store.cursors.advanceFeedReadAtOfMany(feedMoves),
      store.marks.advanceSeenOfMany(noticeMoves),
      store.conversations.advanceReadSeqs(seqMoves),
    ]);

    // A feed or notice cursor already past the move changed nothing: its core is not told. One
    // that stands where the move put it is told, also when a retried call finds it there. A
    // conversation cursor tells for every member (its clamp is not known here).
    const events = new Map<number, PoolEvent[]>();
    const tell = (event: PoolEvent) => {
      const pool = userPool(this.ctx, event.user);
      const list = events.get(pool);
      if (list) list.push(event);
      else events.set(pool, [event]);
    };
    feedMoves.forEach(({ user, to }, i) => {
      if (readAts[i] === to) tell({ kind: 'cursor', user, readAt: to });
    });
    const remarked = new Set<string>();
    noticeMoves.forEach(({ user, to }, i) => {
      if (seens[i] === to) remarked.add(user);
    });
    // A non-member's entry is ignored (null).
    const listed = new Set<string>();
    seqMoves.forEach(({ user }, i) => {
      if (readSeqs[i] !== null) listed.add(user);
    });
    for (const user of new Set([...remarked, ...listed])) tell({ kind: 'marks', user });
    await Promise.all([
      ...[...events].map(([pool, list]) => store.changes.appendPoolEvents(pool, list)),
      // The users' watched conversation lists, as after a conversation read.
      listed.size > 0 ? store.fencedBadges.signalLists([...listed]) : undefined,
    ]);
    return { accepted: users.length };
  }
}
