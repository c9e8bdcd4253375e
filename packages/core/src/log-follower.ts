import type { Clock } from '@bubble/protocol';
import type { BubbleStore, LogRead, PostEvent } from '@bubble/store';
import type { Logger } from 'pino';
import type { ExtrasTracker } from './extras-tracker.js';
import type { FeedCounter } from './feed-counter.js';
import type { PoolTenure } from './pool-tenures.js';

export interface LogFollowerOptions {
  store: BubbleStore;
  clock: Clock;
  log: Logger;
  counter: FeedCounter;
  extras: ExtrasTracker;
  lookbackMs: number;
  /** Most log entries read per pool (and from the post and shared logs) in one read. */
  maxEventsPerRead: number;
  /** Lets go of a user who went offline. */
  release: (user: string) => void;
}

/** What a sweep's reading of the logs leaves to do. */
export interface LogCatchUp {
  /** When the logs were read: the counter has advanced to it. */
  now: number;
  /** Users who came online, to load whole. */
  toLoad: Set<string>;
  /** Held users whose follows changed. */
  refollow: Set<string>;
  /** Held users whose marks or conversations changed. */
  remark: Set<string>;
  /** Held users whose interaction counters changed. */
  recount: Set<string>;
  /** Some read came back full: the core is behind on the logs. */
  behind: boolean;
}

/**
 * Follows the change logs: the post log (counted into the FeedCounter as it comes), the shared
 * log (notices, red dots, messages: into the ExtrasTracker) and the logs of the pools held
 * (presence, follows, marks, cursors: what users to load or refresh). A log with a gap (trimmed
 * past our position, or lost and recreated) is repaired by reloading what it would have told.
 */
export class LogFollower {
  private postCursor = '0-0';
  private sharedCursor = '0-0';
  private following: Promise<void> | null = null;

  constructor(private readonly options: LogFollowerOptions) {}

  /** A read of the post log between sweeps, if one is running. */
  get reading(): Promise<void> | null {
    return this.following;
  }

  /** Starts at the end of the logs, with the shared sources loaded whole. */
  async start(): Promise<void> {
    const { store } = this.options;
    this.postCursor = await store.changes.postLogEnd();
    // The log position first: a notice published while the state loads is applied again.
    this.sharedCursor = await store.changes.sharedLogEnd();
    await this.loadShared();
  }

  /** Notices and red dots, which every held user is counted against. */
  async loadShared(): Promise<void> {
    const { store, extras } = this.options;
    const [liveIds, marked] = await Promise.all([store.notices.liveIds(), store.reddots.all()]);
    extras.setShared(liveIds, marked);
  }

  /**
   * Reads and counts the new posts, unless a read is already running. Between sweeps only: a
   * sweep finds just the last moments' posts to walk, and its loads rely on no post being
   * counted between a user's follows and their authors' windows.
   */
  followPosts(): void {
    if (this.following) return;
    const { store, clock, log, counter, maxEventsPerRead } = this.options;
    this.following = (async () => {
      const read = await store.changes.readPostEvents(this.postCursor, maxEventsPerRead);
      // A gap is repaired by the next sweep, which reads from the same position.
      if (read.gap) return;
      counter.advanceTo(clock.now());
      this.applyPosts(read.entries);
    })()
      .catch((err: unknown) => log.warn({ err }, 'reading new posts failed'))
      .finally(() => {
        this.following = null;
      });
  }

  /**
   * A sweep's reading: the logs of the pools held, the post log and the shared log from where
   * we stand. Posts and shared events are applied; the pools' events say whom to load.
   */
  async catchUp(tenures: readonly PoolTenure[]): Promise<LogCatchUp> {
    const { store, clock, log, counter, extras, maxEventsPerRead, release } = this.options;
    const [poolReads, postRead, sharedRead] = await Promise.all([
      store.changes.readPoolEvents(
        tenures.map((p) => ({ pool: p.pool, after: p.cursor })),
        maxEventsPerRead,
      ),
      store.changes.readPostEvents(this.postCursor, maxEventsPerRead),
      store.changes.readSharedEvents(this.sharedCursor, maxEventsPerRead),
    ]);

    const now = clock.now();
    counter.advanceTo(now);

    // A gap (entries trimmed, or the log lost with its key or its tail): the reader moves to
    // the log's end first, then reloads what the skipped entries would have told, so a change
    // logged meanwhile is read again rather than missed.
    if (postRead.gap) {
      log.warn('post change log has a gap (trimmed or lost); reloading every author window');
      this.postCursor = await store.changes.postLogEnd();
      await this.reloadAuthors(trackedAuthors(tenures, counter));
      await this.reloadTopics(trackedTopics(tenures, counter));
    } else {
      this.applyPosts(postRead.entries);
    }
    if (sharedRead.gap) {
      log.warn('shared change log has a gap (trimmed or lost); reloading notices, red dots, marks');
      this.sharedCursor = await store.changes.sharedLogEnd();
      await this.loadShared();
    } else {
      for (const { id, event } of sharedRead.entries) {
        extras.apply(event);
        this.sharedCursor = id;
      }
    }

    const toLoad = new Set<string>();
    const refollow = new Set<string>();
    const remark = new Set<string>();
    const recount = new Set<string>();
    for (const held of tenures) {
      const read = poolReads.get(held.pool);
      if (!read) continue;
      if (read.gap) {
        await this.rebuildPool(held, now, toLoad);
        continue;
      }
      for (const { id, event } of read.entries) {
        held.cursor = id;
        switch (event.kind) {
          case 'online':
            held.users.add(event.user);
            toLoad.add(event.user);
            break;
          case 'offline':
            held.users.delete(event.user);
            toLoad.delete(event.user);
            refollow.delete(event.user);
            remark.delete(event.user);
            recount.delete(event.user);
            release(event.user);
            break;
          case 'follows':
            if (held.users.has(event.user) && !toLoad.has(event.user)) refollow.add(event.user);
            break;
          case 'marks':
            if (held.users.has(event.user) && !toLoad.has(event.user)) remark.add(event.user);
            break;
          case 'counters':
            if (held.users.has(event.user) && !toLoad.has(event.user)) recount.add(event.user);
            break;
          case 'cursor':
            counter.advanceReadAt(event.user, event.readAt);
            break;
        }
      }
    }
    if (sharedRead.gap) {
      for (const user of counter.heldUsers()) if (!toLoad.has(user)) remark.add(user);
    }

    // A read with a gap moved its reader to the log's end: not behind on that log.
    const full = (read: LogRead<unknown>) => !read.gap && read.entries.length >= maxEventsPerRead;
    const behind = full(postRead) || full(sharedRead) || [...poolReads.values()].some(full);
    return { now, toLoad, refollow, remark, recount, behind };
  }

  /**
   * A pool whose log has a gap is taken again as a new owner takes it: from the log's end, with
   * its held set rebuilt from presence. Users no longer present are let go (their offline event
   * may be what was skipped); every present one is loaded whole, follows, marks and cursor.
   */
  private async rebuildPool(held: PoolTenure, now: number, toLoad: Set<string>): Promise<void> {
    const { store, log, release } = this.options;
    held.cursor = await store.changes.poolLogEnd(held.pool);
    const present = new Set(await store.presence.members(held.pool));
    let dropped = 0;
    for (const user of held.users) {
      if (present.has(user)) continue;
      held.users.delete(user);
      release(user);
      dropped++;
    }
    for (const user of present) {
      held.users.add(user);
      toLoad.add(user);
    }
    log.warn(
      { pool: held.pool, present: present.size, dropped },
      'pool change log has a gap (trimmed or lost); rebuilt the pool from presence',
    );
  }

  private applyPosts(entries: readonly { id: string; event: PostEvent }[]): void {
    const { counter } = this.options;
    for (const { id, event } of entries) {
      if (event.kind === 'post') counter.addPost(event.author, event.id, event.ts, event.topics);
      else counter.deletePost(event.author, event.id, event.ts);
      this.postCursor = id;
    }
  }

  /** After the authors' reload: a topic's repair recomputes its followers from the windows. */
  private async reloadTopics(topics: string[]): Promise<void> {
    if (topics.length === 0) return;
    const { store, counter, lookbackMs } = this.options;
    const windows = await store.posts.topicWindow(topics, counter.time - lookbackMs);
    for (const [topic, posts] of windows) counter.reloadTopic(topic, posts);
  }

  private async reloadAuthors(authors: string[]): Promise<void> {
    const { store, counter, lookbackMs } = this.options;
    const windows = await store.posts.window(authors, counter.time - lookbackMs);
    for (const [author, posts] of windows) counter.reloadAuthor(author, posts);
  }
}

function trackedTopics(tenures: readonly PoolTenure[], counter: FeedCounter): string[] {
  const topics = new Set<string>();
  for (const held of tenures) {
    for (const user of held.users) for (const t of counter.topicsOf(user)) topics.add(t);
  }
  return [...topics];
}

function trackedAuthors(tenures: readonly PoolTenure[], counter: FeedCounter): string[] {
  const authors = new Set<string>();
  for (const held of tenures) {
    for (const user of held.users) for (const a of counter.followsOf(user)) authors.add(a);
  }
  return [...authors];
}
