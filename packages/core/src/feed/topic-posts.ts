import { idHash, type InternTable } from '../intern-table.js';
import type { Arrivals } from './arrivals.js';
import type { IdRoom } from './id-room.js';
import type { TopicFollows } from './topic-follows.js';
import { recordKey, type TopicRecords } from './topic-records.js';
import type { UserCounts } from './user-counts.js';

/** A post of a topic's window: its author and every topic it carries. */
export interface TopicWindowPost {
  author: string;
  id: string;
  ts: number;
  topics: readonly string[];
}

/**
 * How posts reach users through topics: records made from the change log and the stored topic
 * windows, walked as they come, become due, expire or are deleted.
 */
export class TopicPosts {
  constructor(
    private readonly ids: IdRoom,
    private readonly topics: InternTable,
    private readonly topicFollows: TopicFollows,
    private readonly records: TopicRecords,
    private readonly counts: UserCounts,
  ) {}

  /** Fills topic t's window from the stored posts with ts > horizon, known posts once. */
  load(t: number, posts: readonly TopicWindowPost[], horizon: number, now: number): void {
    const records = this.records;
    records.topicTracked[t] = 1;
    for (const post of posts) {
      if (post.ts <= horizon) continue;
      const hash = idHash(post.id);
      const key = recordKey(post.author, post.ts, hash);
      const r =
        records.recordOfKey(key) ??
        this.newRecord(key, post.author, post.ts, hash, post.topics, now);
      records.addToWindow(t, r);
    }
  }

  /**
   * Makes topic t's window equal to the stored posts: what the store lacks is walked out and
   * dropped, what the window lacks is added, and the topic's followers are recomputed. Returns
   * how many posts it had to add or remove.
   */
  reload(t: number, posts: readonly TopicWindowPost[], now: number, lookbackMs: number): number {
    const records = this.records;
    const stored = new Set<string>();
    for (const post of posts) {
      if (post.ts > now - lookbackMs) stored.add(recordKey(post.author, post.ts, idHash(post.id)));
    }
    let repaired = 0;
    const recs = records.winRec[t];
    if (recs) {
      const present: number[] = [];
      for (let i = records.winStart[t]!; i < records.winEnd[t]!; i++) present.push(recs[i]!);
      for (const r of present) {
        if (stored.delete(records.keyOf(r))) continue;
        if (records.recTs[r]! <= now) this.counts.walkRecord(r, -1);
        records.drop(r);
        repaired++;
      }
    }
    for (const post of posts) {
      const hash = idHash(post.id);
      const key = recordKey(post.author, post.ts, hash);
      if (!stored.has(key)) continue;
      records.addToWindow(
        t,
        records.recordOfKey(key) ??
          this.newRecord(key, post.author, post.ts, hash, post.topics, now),
      );
      repaired++;
    }
    if (repaired > 0) {
      const { users, count } = this.topicFollows.followers;
      const followers = users[t]!;
      for (let i = 0; i < count[t]!; i++) this.counts.recomputeAt(followers[i]!, now, lookbackMs);
    }
    return repaired;
  }

  /**
   * A new post from the change log: a record in the window of each loaded topic it carries,
   * unless it has one. Returns the record made, or -1; the caller walks it once the author's
   * window holds the post too.
   */
  add(author: string, ts: number, hash: number, topics: readonly string[], now: number): number {
    const key = recordKey(author, ts, hash);
    const records = this.records;
    if (records.recordOfKey(key) !== undefined) return -1;
    let created = -1;
    for (const name of topics) {
      const t = this.topics.idOf(name);
      if (t === undefined || records.topicTracked[t] !== 1) continue;
      if (created < 0) created = this.newRecord(key, author, ts, hash, topics, now);
      records.addToWindow(t, created);
    }
    return created;
  }

  /** Walks out and drops the record of a post gone, if it has one. */
  remove(author: string, ts: number, hash: number, now: number): void {
    const r = this.records.recordOfKey(recordKey(author, ts, hash));
    if (r === undefined) return;
    if (ts <= now) this.counts.walkRecord(r, -1);
    this.records.drop(r);
  }

  /** Records that left the lookback stop counting, those whose ts has come start. */
  advance(arrivals: Arrivals, time: number, previous: number, horizon: number): void {
    const records = this.records;
    while (arrivals.nextRecordExpiry(horizon)) {
      const { id: r, ts, hash } = arrivals;
      if (!records.isRecord(r, ts, hash)) continue;
      if (ts <= previous) this.counts.walkRecord(r, -1);
      records.drop(r);
    }
    while (arrivals.nextRecordArrival(time)) {
      const { id: r, ts, hash } = arrivals;
      if (ts > horizon && records.isRecord(r, ts, hash)) this.counts.walkRecord(r, 1);
    }
  }

  /** A record of the post, its author and topics interned. */
  private newRecord(
    key: string,
    author: string,
    ts: number,
    hash: number,
    topics: readonly string[],
    now: number,
  ): number {
    const a = this.ids.author(author);
    const topicIds = new Int32Array(topics.length);
    for (let k = 0; k < topics.length; k++) topicIds[k] = this.ids.topic(topics[k]!);
    return this.records.create(key, a, topicIds, ts, hash, now);
  }
}
