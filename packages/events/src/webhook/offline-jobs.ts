import type { OfflineJob, OfflineJobs } from '@bubble/badges';
import type { RedisWebhookQueue } from '@bubble/store';

/** What BUBBLE_WEBHOOK_SOURCES may name: the sources whose changes reach a user without a socket. */
export const WEBHOOK_SOURCES = ['conversations', 'counters', 'notices', 'reddots', 'feed'] as const;
export type WebhookSource = (typeof WEBHOOK_SOURCES)[number];

/**
 * What a job tells a delivery entry's `reasons`: the source that changed, or `read` for a read of
 * the user's own (a deleted post lowers the feed).
 */
export function reasonOfJob(job: OfflineJob): string {
  switch (job.kind) {
    case 'conversation':
    case 'users':
      return 'conversations';
    case 'notice':
      return 'notices';
    case 'reddot':
      return 'reddots';
    case 'user':
      return job.source;
    case 'post':
      return 'feed';
  }
}

/** Whether the job can lower a total: due for users with a live connection too. */
export function lowers(job: OfflineJob): boolean {
  return 'decrease' in job && job.decrease === true;
}

/**
 * The badges layer's job queue: one XADD per write of a named source, or one that can lower a
 * total (any source: the phone must not keep a number above the badge), nothing for the others.
 * No per-member work: the delivery workers expand the job.
 */
export function redisOfflineJobs(
  queue: RedisWebhookQueue,
  sources: readonly WebhookSource[],
): OfflineJobs {
  const named = new Set<string>(sources);
  return {
    async append(job) {
      if (lowers(job) || named.has(reasonOfJob(job))) await queue.appendJob(JSON.stringify(job));
    },
  };
}

const isString = (value: unknown): value is string => typeof value === 'string';

/** A job as the queue holds it, or null when it is not one (a dead letter, not a retry). */
export function parseJob(text: string | null): OfflineJob | null {
  if (text === null) return null;
  try {
    const job = JSON.parse(text) as OfflineJob;
    if ('items' in job && job.items !== undefined && !Array.isArray(job.items)) return null;
    switch (job?.kind) {
      case 'conversation':
        return isString(job.conversation) &&
          Number.isFinite(job.maxSeq) &&
          Array.isArray(job.senders)
          ? job
          : null;
      case 'notice':
        return Number.isFinite(job.id) ? job : null;
      case 'reddot':
        return isString(job.name) ? job : null;
      case 'user':
        return isString(job.user) && ['counters', 'read', 'conversations'].includes(job.source)
          ? job
          : null;
      case 'users':
        return Array.isArray(job.users) && job.users.every(isString) ? job : null;
      case 'post':
        return Number.isFinite(job.ts) ? job : null;
      default:
        return null;
    }
  } catch {
    return null;
  }
}
