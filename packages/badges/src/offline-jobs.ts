import type { WebhookItem } from '@bubble/store';

/** What lowered a total: a job so marked is delivered whatever BUBBLE_WEBHOOK_SOURCES names. */
type Lowering = { decrease: true };

/**
 * Offline delivery (docs/api.md): what a write tells the delivery workers. One job per write,
 * whatever the number of users it reaches: the workers expand it. An increase names what caused
 * it (`items`, at most 10); a decrease is marked, as it is due for users with a live connection
 * too (docs/api.md, "Devices in sync").
 */
export type OfflineJob =
  | {
      kind: 'conversation';
      conversation: string;
      maxSeq: number;
      senders: string[];
      items?: WebhookItem[];
    }
  | { kind: 'notice'; id: number; decrease?: true }
  | { kind: 'reddot'; name: string; decrease?: true }
  /** One user's own source: a counter event or retraction, or a read of theirs. */
  | { kind: 'user'; user: string; source: 'counters'; items?: WebhookItem[]; decrease?: true }
  | ({ kind: 'user'; user: string; source: 'read' | 'conversations' } & Lowering)
  /** The members of a dissolved conversation (at most DISSOLVED_USERS_PER_JOB). */
  | ({ kind: 'users'; users: string[]; source: 'conversations' } & Lowering)
  /** A deleted post: the users delivered to since `ts` may have been shown it. */
  | ({ kind: 'post'; ts: number } & Lowering);

/** A dissolved conversation's members are told in jobs of this many. */
export const DISSOLVED_USERS_PER_JOB = 1_000;

/** Where the badges layer appends a job, after the write it stands for (also a retried one). */
export interface OfflineJobs {
  append(job: OfflineJob): Promise<void>;
}
