import type { RedisClient } from '../redis/connect.js';
import { ScriptStatus } from '../redis/script-status.js';
import type { ScriptRunner } from '../redis/scripts.js';
import { followCapError, type FollowGraph, type FollowOutcome } from './follow-graph.js';

/** A user's follow set (of authors or of topics, one SET in the user's slot each). */
export class RedisFollowGraph implements FollowGraph {
  constructor(
    private readonly redis: RedisClient,
    private readonly run: ScriptRunner,
    /** What is followed, for the cap's message. */
    private readonly noun: string,
    private readonly keyOf: (user: string) => string,
  ) {}

  async follow(user: string, author: string, cap: number): Promise<FollowOutcome> {
    const result = await this.run.followAuthor([this.keyOf(user)], [author, cap]);
    if (result === ScriptStatus.Refused) {
      throw followCapError(cap, this.noun);
    }
    return result === ScriptStatus.Done ? 'added' : 'exists';
  }

  async unfollow(user: string, author: string): Promise<boolean> {
    return (await this.redis.srem(this.keyOf(user), author)) === 1;
  }

  async replace(user: string, authors: readonly string[]): Promise<void> {
    await this.run.replaceFollows([this.keyOf(user)], authors);
  }

  async list(user: string): Promise<string[]> {
    return this.redis.smembers(this.keyOf(user));
  }
}
