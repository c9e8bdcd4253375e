/** What offline delivery's queue hands its workers (RedisWebhookQueue). */

/** The consumer group of the jobs stream (docs/api.md, offline delivery). */
export const WEBHOOK_GROUP = 'bubble';
/** The page cursor of a job whose last page is scheduled: what is left is to acknowledge it. */
export const JOB_DONE = 'done';

export interface WebhookJobEntry {
  id: string;
  /** The job as appended (JSON text), or null for an entry without a `job` field. */
  job: string | null;
  /**
   * Whether the job may have been expanded in part before (claimed from another consumer, or
   * read again after the group was recreated): its page cursor is to be read first.
   */
  resumed: boolean;
}

export interface ScheduledPage {
  added: number;
  coalesced: number;
  shed: number;
}

/** What caused an increase, as the job named it (docs/api.md, `items`). */
export type WebhookItem =
  | {
      kind: 'message';
      conversation: string;
      seq: number;
      from: string;
      preview?: Record<string, unknown>;
    }
  | { kind: 'counter'; counter: string; id: string }
  | { kind: 'notice'; id: number };

/** The most items a user's entry holds (the newest kept). */
export const MAX_WEBHOOK_ITEMS = 10;

/** What bubble last delivered to a user: the total their phone shows, and its seq. */
export interface ShownBadge {
  total: number;
  seq: number;
}

export interface DueUser {
  user: string;
  reasons: string[];
  /** Oldest first, at most MAX_WEBHOOK_ITEMS. */
  items: WebhookItem[];
  /** Null when bubble never delivered to them (or forgot: trimShown). */
  shown: ShownBadge | null;
}

/** A user of a stored batch and what it shows them. */
export interface SentBadge extends ShownBadge {
  user: string;
}

export interface ClaimedBatch {
  id: string;
  body: string;
  /** The attempt about to be made: 2 for the first retry. */
  attempt: number;
}

export interface WebhookQueueStats {
  /** Users waiting for a delivery. */
  queued: number;
  /** How long the longest-waiting of them has waited (ms), 0 when none. */
  oldestQueuedMs: number;
  /** Batches stored and not yet delivered or dead-lettered. */
  retrying: number;
  deadLetters: number;
  /** Jobs appended and not yet fully expanded. */
  jobs: number;
  /** Conversations whose merged job waits for the end of their expansion's interval. */
  deferred: number;
}

export interface DeadDelivery {
  id: string;
  body: string;
  error: string;
  attempts: number;
  status: number | null;
}
