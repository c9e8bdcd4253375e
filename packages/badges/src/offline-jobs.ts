/**
 * Offline delivery (docs/api.md): what a write of a named source tells the delivery workers.
 * One job per write, whatever the number of users it reaches: the workers expand it.
 */
export type OfflineJob =
  | { kind: 'conversation'; conversation: string; maxSeq: number; senders: string[] }
  | { kind: 'notice'; id: number }
  | { kind: 'reddot'; name: string }
  /** One user's own source: an interaction counter event or retraction (counters.ts). */
  | { kind: 'user'; user: string; source: 'counters' };

/** Where the badges layer appends a job, after the write it stands for (also a retried one). */
export interface OfflineJobs {
  append(job: OfflineJob): Promise<void>;
}
