/**
 * The change logs the cores follow: one per pool, the post log, and the shared log of the
 * sources beside the feed. Entries are positioned by stream ids (stream-id.ts).
 */

/** Changes a core applies to the users of one pool, in log order. */
export type PoolEvent =
  | { kind: 'online'; user: string }
  | { kind: 'offline'; user: string }
  /** The user's follow set changed: reload it. */
  | { kind: 'follows'; user: string }
  /** The user's feed read cursor moved to `readAt`. */
  | { kind: 'cursor'; user: string; readAt: number }
  /** The user's notice cursor, red-dot clicks or conversations changed: reload them (and the counters). */
  | { kind: 'marks'; user: string }
  /** The user's interaction counters changed (an event, a retraction, a read): reload them. */
  | { kind: 'counters'; user: string };

/** Changes to the post index, in log order; every core follows all of them. */
export type PostEvent =
  | { kind: 'post'; author: string; id: string; ts: number; topics?: string[] }
  | { kind: 'delete'; author: string; id: string; ts: number };

export interface LogEntry<E> {
  /** Position in the log, "<ms>-<seq>" as Redis stream ids, ordered. */
  id: string;
  event: E;
}

export interface LogRead<E> {
  entries: LogEntry<E>[];
  /**
   * True when entries after `after` were trimmed before they could be read, or when `after`
   * (past LOG_START) is not a position of this log: the log was lost, or lost its tail, and
   * was recreated (a Redis restarted empty or from an AOF missing its last second). Either
   * way the reader missed changes and must reload what it holds from the stored sources.
   */
  gap: boolean;
}

/** The position before any entry. */
export const LOG_START = '0-0';

/** Changes every core follows, beside the posts: they concern users of every pool. */
export type SharedEvent =
  | { kind: 'notice'; id: number; live: boolean }
  | { kind: 'reddot'; name: string; ts: number | null }
  | { kind: 'messages'; conversation: string; maxSeq: number; senders: Record<string, number> };

export interface ChangeLog {
  appendPoolEvents(pool: number, events: readonly PoolEvent[]): Promise<void>;
  /** One batch for many pools: one read per pool, issued together. */
  readPoolEvents(
    cursors: ReadonlyArray<{ pool: number; after: string }>,
    limit: number,
  ): Promise<Map<number, LogRead<PoolEvent>>>;
  /** Position of the newest pool entry (LOG_START when empty): where a new owner starts. */
  poolLogEnd(pool: number): Promise<string>;

  appendPostEvents(events: readonly PostEvent[]): Promise<void>;
  readPostEvents(after: string, limit: number): Promise<LogRead<PostEvent>>;
  postLogEnd(): Promise<string>;

  /** Notices, red dots and conversation messages: every core follows them too. */
  appendSharedEvents(events: readonly SharedEvent[]): Promise<void>;
  readSharedEvents(after: string, limit: number): Promise<LogRead<SharedEvent>>;
  sharedLogEnd(): Promise<string>;
}
