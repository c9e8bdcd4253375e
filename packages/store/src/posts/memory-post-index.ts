import type { MemoryChangeLog } from '../change-log/memory-change-log.js';
import type { IngestResult, Post, PostIndex, TopicPost, WindowPost } from './post-index.js';
import { SortedPosts } from './sorted-posts.js';
import { countsInTopicWindow, parseTopicMember, topicMember } from './topic-windows.js';

/** Stores and logs in one synchronous step, as the Redis scripts do on one server. */
export class MemoryPostIndex implements PostIndex {
  private readonly byAuthor = new Map<string, SortedPosts>();
  /** author → (post id → the time the tombstone may be forgotten after). */
  private readonly deleted = new Map<string, Map<string, number>>();
  /** author → (post id → its topics), for the stored posts that carry topics. */
  private readonly topicsOf = new Map<string, Map<string, readonly string[]>>();
  /** topic → its window, members as topicMember() writes them. */
  private readonly byTopic = new Map<string, SortedPosts>();

  constructor(private readonly log: MemoryChangeLog) {}

  async ingest(posts: readonly Post[], minTs: number): Promise<IngestResult> {
    let accepted = 0;
    let ignored = 0;
    const stored: Post[] = [];
    const touched = new Set<string>();
    for (const post of posts) {
      touched.add(post.author);
      if (post.ts <= minTs || this.isDeleted(post.author, post.id, minTs)) {
        ignored++;
        continue;
      }
      let sorted = this.byAuthor.get(post.author);
      if (!sorted) this.byAuthor.set(post.author, (sorted = new SortedPosts()));
      if (sorted.add(post.id, post.ts)) {
        const topics = post.topics ?? [];
        if (topics.length > 0) this.storeTopics(post.author, post.id, post.ts, topics, minTs);
        stored.push(
          topics.length > 0
            ? { author: post.author, id: post.id, ts: post.ts, topics: [...topics] }
            : { author: post.author, id: post.id, ts: post.ts },
        );
      }
      accepted++;
    }
    for (const author of touched) this.trim(author, minTs);
    this.log.appendPostEventsNow(
      stored.map(({ topics, ...post }) =>
        topics ? { kind: 'post', ...post, topics: [...topics] } : { kind: 'post', ...post },
      ),
    );
    return { accepted, ignored, stored };
  }

  async remove(author: string, id: string, now: number, minTs: number): Promise<number | null> {
    const sorted = this.byAuthor.get(author);
    const ts = sorted?.tsOf(id);
    sorted?.remove(id);
    if (ts !== undefined) this.dropTopics(author, id);
    let tombs = this.deleted.get(author);
    if (!tombs) this.deleted.set(author, (tombs = new Map()));
    // A repeated delete must not shorten the tombstone a post stamped ahead of `now` got.
    tombs.set(id, Math.max(tombs.get(id) ?? now, ts ?? now, now));
    this.trim(author, minTs);
    if (ts === undefined) return null;
    this.log.appendPostEventsNow([{ kind: 'delete', author, id, ts }]);
    return ts;
  }

  async window(authors: readonly string[], afterTs: number): Promise<Map<string, WindowPost[]>> {
    const out = new Map<string, WindowPost[]>();
    for (const author of authors) out.set(author, this.byAuthor.get(author)?.after(afterTs) ?? []);
    return out;
  }

  async topicWindow(topics: readonly string[], afterTs: number): Promise<Map<string, TopicPost[]>> {
    const out = new Map<string, TopicPost[]>();
    for (const topic of topics) {
      const posts = this.byTopic.get(topic)?.after(afterTs) ?? [];
      out.set(
        topic,
        posts.map((post) => parseTopicMember(post.id, post.ts)),
      );
    }
    return out;
  }

  async countBetween(
    authors: readonly string[],
    afterTs: number,
    untilTs: number,
    topics: readonly string[] = [],
  ): Promise<number> {
    let total = 0;
    for (const author of authors) {
      total += this.byAuthor.get(author)?.countBetween(afterTs, untilTs) ?? 0;
    }
    if (topics.length === 0 || untilTs <= afterTs) return total;
    const followed = new Set(authors);
    const topicSet = new Set(topics);
    for (const topic of topicSet) {
      for (const post of this.byTopic.get(topic)?.after(afterTs) ?? []) {
        if (post.ts > untilTs) break;
        if (countsInTopicWindow(post.id, topic, followed, topicSet)) total++;
      }
    }
    return total;
  }

  private storeTopics(
    author: string,
    id: string,
    ts: number,
    topics: readonly string[],
    minTs: number,
  ): void {
    let byId = this.topicsOf.get(author);
    if (!byId) this.topicsOf.set(author, (byId = new Map()));
    byId.set(id, topics);
    const member = topicMember(author, id, topics);
    for (const topic of topics) {
      let window = this.byTopic.get(topic);
      if (!window) this.byTopic.set(topic, (window = new SortedPosts()));
      window.add(member, ts);
      window.trimThrough(minTs);
      if (window.size === 0) this.byTopic.delete(topic);
    }
  }

  /** Takes a removed post out of its topics' windows. */
  private dropTopics(author: string, id: string): void {
    const byId = this.topicsOf.get(author);
    const topics = byId?.get(id);
    if (!byId || !topics) return;
    byId.delete(id);
    if (byId.size === 0) this.topicsOf.delete(author);
    const member = topicMember(author, id, topics);
    for (const topic of topics) {
      const window = this.byTopic.get(topic);
      window?.remove(member);
      if (window?.size === 0) this.byTopic.delete(topic);
    }
  }

  private isDeleted(author: string, id: string, minTs: number): boolean {
    const until = this.deleted.get(author)?.get(id);
    return until !== undefined && until > minTs;
  }

  private trim(author: string, minTs: number): void {
    const sorted = this.byAuthor.get(author);
    if (sorted) {
      const byId = this.topicsOf.get(author);
      for (const id of sorted.trimThrough(minTs)) if (byId) this.dropTopics(author, id);
      if (sorted.size === 0) this.byAuthor.delete(author);
    }
    const tombs = this.deleted.get(author);
    if (tombs) {
      for (const [id, until] of tombs) if (until <= minTs) tombs.delete(id);
      if (tombs.size === 0) this.deleted.delete(author);
    }
  }
}
