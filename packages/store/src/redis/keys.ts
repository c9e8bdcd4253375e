import { poolOf } from '@bubble/protocol';

/** A key prefix may not contain braces: the first {…} of a key is its Redis Cluster hash tag. */
export const KEY_PREFIX_PATTERN = /^[A-Za-z0-9_.:-]{1,32}$/;

/**
 * Every Redis key bubble uses is built here and nowhere else (docs/redis-keys.md).
 * Hash tags put what one command or script touches into one slot:
 *   {u:<user>}   a user's own sources (follows, cursors)
 *   {a:<author>} an author's posts and their tombstones
 *   {p:<pool>}   the badge states of a pool's users, next to the pool's fencing counter
 */
export class RedisKeys {
  constructor(
    readonly prefix: string,
    readonly pools: number,
  ) {
    if (!KEY_PREFIX_PATTERN.test(prefix)) {
      throw new Error(`key prefix ${JSON.stringify(prefix)} must match ${KEY_PREFIX_PATTERN}`);
    }
    if (!Number.isInteger(pools) || pools < 1) throw new Error('pools must be a positive integer');
  }

  follows(user: string): string {
    return `${this.prefix}:{u:${user}}:follows`;
  }

  cursors(user: string): string {
    return `${this.prefix}:{u:${user}}:cursors`;
  }

  posts(author: string): string {
    return `${this.prefix}:{a:${author}}:posts`;
  }

  deletedPosts(author: string): string {
    return `${this.prefix}:{a:${author}}:deleted`;
  }

  badge(user: string): string {
    return `${this.prefix}:{p:${poolOf(user, this.pools)}}:badge:${user}`;
  }

  /** A pattern matching every key under this prefix, for SCAN in tests and tools. */
  all(): string {
    return `${this.prefix}:*`;
  }
}
