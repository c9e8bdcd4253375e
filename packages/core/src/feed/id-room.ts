import type { InternTable } from '../intern-table.js';
import type { AuthorWindows } from './author-windows.js';
import type { FollowArena } from './follow-arena.js';
import type { TopicFollows } from './topic-follows.js';
import type { TopicRecords } from './topic-records.js';

/** Interns authors and topics, making room for a new id in every part's arrays indexed by it. */
export class IdRoom {
  constructor(
    private readonly authors: InternTable,
    private readonly topics: InternTable,
    private readonly arena: FollowArena,
    private readonly topicFollows: TopicFollows,
    private readonly windows: AuthorWindows,
    private readonly records: TopicRecords,
  ) {}

  author(name: string): number {
    const a = this.authors.intern(name);
    if (this.arena.followers.count.length <= a) {
      this.arena.ensureAuthorCapacity(a + 1);
      this.windows.ensureAuthorCapacity(a + 1);
      this.records.ensureAuthorCapacity(a + 1);
    }
    return a;
  }

  topic(name: string): number {
    const t = this.topics.intern(name);
    if (this.topicFollows.followers.count.length <= t) {
      const size = Math.max(16, (t + 1) * 2);
      this.topicFollows.ensureTopicCapacity(size);
      this.records.ensureTopicCapacity(size);
    }
    return t;
  }
}
