import type { SourcesAnswer } from '@bubble/protocol';
import type { FeedInputs } from '../bubble-store/bubble-store.js';
import type { MemoryReadCursors } from '../cursors/memory-read-cursors.js';
import type { MemoryUserMarks } from '../marks/memory-user-marks.js';
import type { MemorySourcesBook } from './memory-sources-book.js';
import { withRecordedChanges } from './recorded-follows.js';
import type { UserSources } from './user-sources.js';

/** UserSources of the memory engine, on the book its follow graphs share. */
export class MemoryUserSources implements UserSources {
  readonly onDemand: boolean;

  constructor(
    private readonly book: MemorySourcesBook,
    private readonly parts: {
      cursors: MemoryReadCursors;
      marks: MemoryUserMarks;
      feedInputs(user: string): Promise<FeedInputs>;
    },
  ) {
    this.onDemand = book.onDemand;
  }

  async held(users: readonly string[]): Promise<boolean[]> {
    return users.map((user) => this.book.held(user));
  }

  async beginFetch(users: readonly string[], ttlMs: number): Promise<void> {
    if (!this.onDemand) return;
    for (const user of users) this.book.beginFetch(user, ttlMs);
  }

  async install(
    entries: readonly { user: string; answer: SourcesAnswer }[],
    caps: { follows: number; topics: number },
  ): Promise<FeedInputs[]> {
    const { book } = this;
    const { cursors, marks } = this.parts;
    const seenToSet: { user: string; noticesSeen: number }[] = [];
    // Up to the awaits below, one synchronous step: no follow change comes in between.
    for (const { user, answer } of entries) {
      if (book.held(user)) {
        book.endFetch(user);
        continue;
      }
      const fetch = book.fetchOf(user);
      const follows = withRecordedChanges(answer.follows, fetch?.kinds.a, caps.follows);
      const topics = withRecordedChanges(answer.topics, fetch?.kinds.t, caps.topics);
      book.lists.a.set(user, new Set(follows));
      if (topics.length > 0) book.lists.t.set(user, new Set(topics));
      else book.lists.t.delete(user);
      book.endFetch(user);
      // An async method's body runs to its first await when called: set now, where unset.
      if (answer.readAt !== undefined && !cursors.holds(user)) {
        void cursors.advanceFeedReadAt(user, answer.readAt);
      }
      if (answer.noticesSeen !== undefined) {
        seenToSet.push({ user, noticesSeen: answer.noticesSeen });
      }
    }
    for (const { user, noticesSeen } of seenToSet) {
      if ((await marks.state(user)).seen === null) await marks.advanceSeen(user, noticesSeen);
    }
    return Promise.all(entries.map(({ user }) => this.parts.feedInputs(user)));
  }
}
