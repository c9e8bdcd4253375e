import type { OfflineJob } from '@bubble/badges';
import type { RedisWebhookQueue } from '@bubble/store';
import { lowers } from './offline-jobs.js';

/**
 * One page of the users a job may have changed the badge of: `raised` may see their total go up
 * (due only without a live connection), `lowered` down (due with one too, to correct what
 * their phone shows).
 */
export interface JobPage {
  /** '0' after the last page. */
  next: string;
  raised: string[];
  lowered: string[];
}

export async function pageOfJob(
  queue: RedisWebhookQueue,
  job: OfflineJob,
  cursor: string,
  count: number,
  activeSince: () => number,
): Promise<JobPage> {
  const split = (next: string, users: string[]): JobPage =>
    lowers(job) ? { next, raised: [], lowered: users } : { next, raised: users, lowered: [] };
  switch (job.kind) {
    case 'conversation': {
      const [next, flat] = await queue.scanMembers(job.conversation, cursor, count);
      const senders = new Set(job.senders);
      const page: JobPage = { next, raised: [], lowered: [] };
      for (let i = 0; i < flat.length; i += 2) {
        const member = flat[i]!;
        const value = flat[i + 1]!;
        // A sender's message marked the conversation read for them: what their phone shows
        // may be too high. A muted member's total does not move; one who read up to maxSeq
        // has nothing new. A sender of a merged job may have both: a message of theirs, then
        // others' after it.
        if (senders.has(member)) page.lowered.push(member);
        if (value.endsWith('m') || Number.parseInt(value, 10) >= job.maxSeq) continue;
        page.raised.push(member);
      }
      return page;
    }
    case 'notice':
    case 'reddot': {
      // Users seen within the inactive window: the others have no badge to move.
      const since = activeSince();
      const [next, flat] = await queue.scanSeen(cursor, count);
      const users: string[] = [];
      for (let i = 0; i < flat.length; i += 2) {
        if (Number(flat[i + 1]) >= since) users.push(flat[i]!);
      }
      return split(next, users);
    }
    case 'post': {
      const [next, users] = await queue.scanShownSince(job.ts, cursor, count);
      return split(next, users);
    }
    case 'user':
      return split('0', [job.user]);
    case 'users':
      return split('0', job.users);
  }
}
