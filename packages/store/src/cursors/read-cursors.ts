export interface ReadCursors {
  /** The feed read cursor, or null before the user's first read. */
  feedReadAt(user: string): Promise<number | null>;
  /** readAt := max(readAt, to); returns the cursor after the move. */
  advanceFeedReadAt(user: string, to: number): Promise<number>;
}
