import type { CursorMove } from '../cursors/read-cursors.js';
import type { MemoryChangeLog } from '../change-log/memory-change-log.js';
import { marksEventsByPool } from './marks-events.js';
import { SIGHT_THROTTLE_MS, type UserMarks, type UserMarksState } from './user-marks.js';

interface Marks {
  seen: number | null;
  at: number;
  clicks: Map<string, number>;
}

export class MemoryUserMarks implements UserMarks {
  private readonly byUser = new Map<string, Marks>();
  /** The last-seen index: user → sight, as the inactive job walks it. */
  private readonly lastSeen = new Map<string, number>();

  constructor(
    private readonly log: MemoryChangeLog,
    private readonly pools: number,
    private readonly lifecycle: {
      isOnline(user: string): boolean;
      /** Forgets the user's state beside their marks (MemoryStore.forgetInactiveUser). */
      forget(user: string): void;
    },
  ) {}

  async see(
    user: string,
    now: number,
    highestNoticeId: () => Promise<number>,
  ): Promise<{ seen: number; first: boolean }> {
    const first = this.byUser.get(user)?.seen == null;
    // Read before the marks: another call may see the user while we await.
    const highest = first ? await highestNoticeId() : 0;
    const marks = this.marksOf(user);
    if (marks.seen === null) {
      marks.seen = highest;
      // In the step that sets the cursor: a core holding the user reloads their marks.
      for (const [pool, events] of marksEventsByPool([user], this.pools)) {
        this.log.appendPoolEventsNow(pool, events);
      }
    }
    if (marks.at + SIGHT_THROTTLE_MS <= now) {
      marks.at = now;
      this.lastSeen.set(user, now);
    }
    return { seen: marks.seen!, first };
  }

  async state(user: string): Promise<UserMarksState> {
    const marks = this.byUser.get(user);
    return { seen: marks?.seen ?? null, clicks: Object.fromEntries(marks?.clicks ?? []) };
  }

  async advanceSeen(user: string, to: number): Promise<number> {
    return this.advance(user, to);
  }

  async advanceSeenOfMany(moves: readonly CursorMove[]): Promise<number[]> {
    return moves.map(({ user, to }) => this.advance(user, to));
  }

  async click(user: string, names: readonly string[], at: number): Promise<void> {
    if (names.length === 0) return;
    const marks = this.marksOf(user);
    for (const name of names) marks.clicks.set(name, at);
  }

  async dropInactive(before: number, limit: number, now: number): Promise<string[]> {
    const candidates = [...this.lastSeen]
      .filter(([, at]) => at <= before)
      // Oldest sight first, ties by name: the order of the Redis engine's ZSET.
      .sort((a, b) => a[1] - b[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
      .slice(0, limit);
    const dropped: string[] = [];
    for (const [user] of candidates) {
      if (this.lifecycle.isOnline(user)) {
        // Online through presence (a live connection counts): seen now, as the Redis engine.
        this.marksOf(user).at = now;
        this.lastSeen.set(user, now);
        continue;
      }
      if ((this.byUser.get(user)?.at ?? 0) > before) continue;
      this.byUser.delete(user);
      this.lastSeen.delete(user);
      this.lifecycle.forget(user);
      dropped.push(user);
    }
    for (const [pool, events] of marksEventsByPool(dropped, this.pools)) {
      this.log.appendPoolEventsNow(pool, events);
    }
    return dropped;
  }

  /** What of the user's own state this part holds (MemoryStore.heldFor). */
  holds(user: string): string[] {
    const out: string[] = [];
    if (this.byUser.has(user)) out.push('marks');
    if (this.lastSeen.has(user)) out.push('lastseen');
    return out;
  }

  private advance(user: string, to: number): number {
    const marks = this.marksOf(user);
    marks.seen = Math.max(marks.seen ?? -Infinity, to);
    return marks.seen;
  }

  private marksOf(user: string): Marks {
    let marks = this.byUser.get(user);
    if (!marks) this.byUser.set(user, (marks = { seen: null, at: 0, clicks: new Map() }));
    return marks;
  }
}
