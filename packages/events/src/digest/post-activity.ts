import { LOG_START, streamIdMs, type ChangeLog } from '@bubble/store';

/**
 * A badge's computedAt is the store clock of the process that computed it, a log entry's time
 * the Redis server's: they may differ by half a round trip of the clock's sample. A post this
 * close before a count is taken to be after it (the user is counted, not skipped).
 */
const CLOCK_SLACK_MS = 2_000;
/** Post log entries read per call. */
const READ_LIMIT = 10_000;
/** Reads of the post log stop there: the next call of catchUp() continues. */
const MAX_READS_PER_CATCH_UP = 20;

/**
 * When each author and each topic last had a post stored or deleted, from the post log every
 * core follows (one read per catch-up, whatever the number of followers): what lets the digest
 * skip a user none of whose followed authors or topics posted since their badge was counted.
 * Times are the log's (the entry id's ms, the store's clock). Before `knownSince` nothing is
 * known: a user counted before it is counted again.
 */
export class PostActivity {
  private readonly authors = new Map<string, number>();
  private readonly topics = new Map<string, number>();
  private position = LOG_START;
  private known = Number.POSITIVE_INFINITY;

  constructor(private readonly log: ChangeLog) {}

  get knownSince(): number {
    return this.known;
  }

  /** Reads what the post log holds after the last read (a bounded number of entries). */
  async catchUp(now: number): Promise<void> {
    for (let reads = 0; reads < MAX_READS_PER_CATCH_UP; reads++) {
      const { entries, gap } = await this.log.readPostEvents(this.position, READ_LIMIT);
      if (gap) {
        // Entries were trimmed before this reader saw them: it knows from the first one left
        // (from now when none is left), and nothing before.
        this.authors.clear();
        this.topics.clear();
        this.known = entries.length > 0 ? streamIdMs(entries[0]!.id) : now;
      } else if (this.position === LOG_START) {
        this.known = 0;
      }
      for (const { id, event } of entries) {
        const at = streamIdMs(id);
        this.authors.set(event.author, at);
        if (event.kind === 'post')
          for (const topic of event.topics ?? []) this.topics.set(topic, at);
      }
      if (entries.length > 0) this.position = entries.at(-1)!.id;
      if (entries.length < READ_LIMIT) return;
    }
  }

  /** Whether any of the authors or topics had a post stored or deleted since `counted`. */
  changedSince(authors: readonly string[], topics: readonly string[], counted: number): boolean {
    const since = counted - CLOCK_SLACK_MS;
    if (since < this.known) return true;
    for (const author of authors) if ((this.authors.get(author) ?? 0) > since) return true;
    for (const topic of topics) if ((this.topics.get(topic) ?? 0) > since) return true;
    return false;
  }

  /** Forgets what happened at or before `before`: a user counted before it is counted again. */
  forget(before: number): void {
    if (before <= this.known) return;
    for (const [author, at] of this.authors) if (at <= before) this.authors.delete(author);
    for (const [topic, at] of this.topics) if (at <= before) this.topics.delete(topic);
    this.known = before;
  }

  /** Authors and topics remembered. */
  get size(): number {
    return this.authors.size + this.topics.size;
  }
}
