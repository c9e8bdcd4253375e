import type { CursorMove, ReadCursors } from './read-cursors.js';

export class MemoryReadCursors implements ReadCursors {
  private readonly feed = new Map<string, number>();

  async feedReadAt(user: string): Promise<number | null> {
    return this.feed.get(user) ?? null;
  }

  async advanceFeedReadAt(user: string, to: number): Promise<number> {
    return this.advance(user, to);
  }

  async advanceFeedReadAtOfMany(moves: readonly CursorMove[]): Promise<number[]> {
    return moves.map(({ user, to }) => this.advance(user, to));
  }

  forget(user: string): void {
    this.feed.delete(user);
  }

  holds(user: string): boolean {
    return this.feed.has(user);
  }

  private advance(user: string, to: number): number {
    const next = Math.max(this.feed.get(user) ?? -Infinity, to);
    this.feed.set(user, next);
    return next;
  }
}
