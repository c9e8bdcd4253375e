/** The post index: each author's posts in the lookback window, and each topic's. */

export interface Post {
  author: string;
  id: string;
  ts: number;
  /** Topic names (≤ 10, de-duplicated, in the order given); absent or empty for none. */
  topics?: readonly string[];
}

export interface IngestResult {
  /** Posts now stored, including ones that were stored already (ingest is idempotent). */
  accepted: number;
  /** Posts older than the lookback window, or deleted before: not stored. */
  ignored: number;
  /** The posts this call stored for the first time, in input order. */
  stored: Post[];
}

export interface PostIndex {
  /**
   * Stores each post unless it is at or before `minTs` (outside the lookback) or was deleted.
   * The first stored ts of an (author, id) wins. Entries at or before `minTs` are trimmed.
   * Appends a `post` event for each post stored now to the post log: in the same step on one
   * Redis and in memory; on Redis Cluster right after, and a retry of a call that failed in
   * between appends what that call stored (docs/architecture.md, the write path).
   */
  ingest(posts: readonly Post[], minTs: number): Promise<IngestResult>;
  /**
   * Deletes a post, known or not, and remembers the deletion for the lookback window so a
   * late or retried ingest cannot bring it back. Returns the ts of the post it removed, and
   * logs its `delete` event as ingest logs posts (on Redis Cluster a retry of a delete whose
   * event was not logged returns the ts again and logs it).
   */
  remove(author: string, id: string, now: number, minTs: number): Promise<number | null>;
  /**
   * Number of stored posts with afterTs < ts ≤ untilTs by any of `authors` or carrying any of
   * `topics`, each post once (topic-windows.ts), in one batch.
   */
  countBetween(
    authors: readonly string[],
    afterTs: number,
    untilTs: number,
    topics?: readonly string[],
  ): Promise<number>;
  /** Each author's stored posts with ts > afterTs, ordered by ts; one batch for all authors. */
  window(authors: readonly string[], afterTs: number): Promise<Map<string, WindowPost[]>>;
  /** Each topic's stored posts with ts > afterTs, ordered by ts; one batch for all topics. */
  topicWindow(topics: readonly string[], afterTs: number): Promise<Map<string, TopicPost[]>>;
}

/** A post in a topic's window: who wrote it and every topic it carries. */
export interface TopicPost {
  author: string;
  id: string;
  ts: number;
  topics: string[];
}

export interface WindowPost {
  id: string;
  ts: number;
}
