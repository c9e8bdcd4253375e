/** One user's cursor to move forward: cursor := max(cursor, to). */
export interface CursorMove {
  user: string;
  to: number;
}

export interface ReadCursors {
  /** The feed read cursor, or null before the user's first read. */
  feedReadAt(user: string): Promise<number | null>;
  /** readAt := max(readAt, to); returns the cursor after the move. */
  advanceFeedReadAt(user: string, to: number): Promise<number>;
  /**
   * advanceFeedReadAt of each move as one batch (not a round trip per user); the cursors after
   * the moves, in input order. A user may come more than once: the moves apply in turn.
   */
  advanceFeedReadAtOfMany(moves: readonly CursorMove[]): Promise<number[]>;
}
