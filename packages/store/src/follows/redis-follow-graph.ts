import type { RedisClient } from '../redis/connect.js';
import type { ScriptRunner } from '../redis/scripts.js';
import {
  followCapError,
  RECORDED_UNFOLLOWS_LIMIT,
  recordedChangesError,
  type FollowGraph,
  type FollowOutcome,
} from './follow-graph.js';
import { decodeFollowList } from './follow-list.js';
import type { FollowKind } from './recorded-follows.js';

/** What followAuthor-3, unfollowAuthor-3 and replaceFollows-3 answer (their headers). */
const Reply = {
  Done: 1,
  Unchanged: 0,
  Cap: -1,
  Recorded: 2,
  NotHeld: -2,
  RecordFull: -3,
} as const;

/** The keys a follow script of one user takes: their list, their authors list, their fetch marker. */
export interface FollowKeysOf {
  list(user: string): string;
  authors(user: string): string;
  fetch(user: string): string;
}

/** A user's follow list (of authors or of topics): one STRING in the user's slot each. */
export class RedisFollowGraph implements FollowGraph {
  private readonly onDemand: '1' | '0';

  constructor(
    private readonly redis: RedisClient,
    private readonly run: ScriptRunner,
    private readonly kind: FollowKind,
    /** What is followed, for the cap's message. */
    private readonly noun: string,
    private readonly keysOf: FollowKeysOf,
    onDemand: boolean,
  ) {
    this.onDemand = onDemand ? '1' : '0';
  }

  async follow(user: string, author: string, cap: number): Promise<FollowOutcome> {
    const limit = 2 * cap;
    const reply = await this.run.followAuthor(this.keys(user), [
      author,
      cap,
      this.kind,
      this.onDemand,
      limit,
    ]);
    switch (reply) {
      case Reply.Done:
        return 'added';
      case Reply.Unchanged:
        return 'exists';
      case Reply.Recorded:
        return 'recorded';
      case Reply.NotHeld:
        return 'not-held';
      case Reply.Cap:
        throw followCapError(cap, this.noun);
      default:
        throw recordedChangesError(limit, this.noun);
    }
  }

  async unfollow(user: string, author: string): Promise<boolean> {
    const limit = RECORDED_UNFOLLOWS_LIMIT;
    const reply = await this.run.unfollowAuthor(this.keys(user), [
      author,
      this.kind,
      this.onDemand,
      limit,
    ]);
    if (reply === Reply.RecordFull) throw recordedChangesError(limit, this.noun);
    return reply === Reply.Done || reply === Reply.Recorded;
  }

  async replace(user: string, authors: readonly string[]): Promise<boolean> {
    const reply = await this.run.replaceFollows(this.keys(user), [
      this.kind,
      this.onDemand,
      ...authors,
    ]);
    return reply !== Reply.NotHeld;
  }

  async list(user: string): Promise<string[]> {
    return decodeFollowList(await this.redis.get(this.keysOf.list(user)));
  }

  private keys(user: string): [list: string, authors: string, fetch: string] {
    return [this.keysOf.list(user), this.keysOf.authors(user), this.keysOf.fetch(user)];
  }
}
