import type { OfflineJob, OfflineJobs } from '@bubble/badges';
import type { RedisWebhookQueue } from '@bubble/store';

/** What BUBBLE_WEBHOOK_SOURCES may name: the sources whose changes reach a user without a socket. */
export const WEBHOOK_SOURCES = ['conversations', 'counters', 'notices', 'reddots', 'feed'] as const;
export type WebhookSource = (typeof WEBHOOK_SOURCES)[number];

/** The source whose change a job stands for. */
export function sourceOfJob(job: OfflineJob): WebhookSource {
  switch (job.kind) {
    case 'conversation':
      return 'conversations';
    case 'notice':
      return 'notices';
    case 'reddot':
      return 'reddots';
    case 'user':
      return job.source;
  }
}

/**
 * The badges layer's job queue: one XADD per write of a named source, nothing for the others.
 * No per-member work: the delivery workers expand the job.
 */
export function redisOfflineJobs(
  queue: RedisWebhookQueue,
  sources: readonly WebhookSource[],
): OfflineJobs {
  const named = new Set(sources);
  return {
    async append(job) {
      if (named.has(sourceOfJob(job))) await queue.appendJob(JSON.stringify(job));
    },
  };
}

/** A job as the queue holds it, or null when it is not one (a dead letter, not a retry). */
export function parseJob(text: string | null): OfflineJob | null {
  if (text === null) return null;
  try {
    const job = JSON.parse(text) as OfflineJob;
    switch (job?.kind) {
      case 'conversation':
        return typeof job.conversation === 'string' &&
          Number.isFinite(job.maxSeq) &&
          Array.isArray(job.senders)
          ? job
          : null;
      case 'notice':
        return Number.isFinite(job.id) ? job : null;
      case 'reddot':
        return typeof job.name === 'string' ? job : null;
      case 'user':
        return typeof job.user === 'string' && job.source === 'counters' ? job : null;
      default:
        return null;
    }
  } catch {
    return null;
  }
}
