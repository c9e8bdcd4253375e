import type { RedisClient } from '../redis/connect.js';
import type { RedisKeys } from '../redis/keys.js';
import type { ScriptRunner } from '../redis/scripts.js';
import { slotSpreadOf } from '../redis/slot-spread.js';
import type { CursorMove, ReadCursors } from './read-cursors.js';
import { advanceCursorFields } from './redis-cursor-moves.js';

/** The feed read cursor's field in the user's cursors hash. */
export const FEED_CURSOR = 'feed';

export class RedisReadCursors implements ReadCursors {
  private readonly spread;

  constructor(
    private readonly redis: RedisClient,
    private readonly run: ScriptRunner,
    private readonly keys: RedisKeys,
  ) {
    this.spread = slotSpreadOf(redis);
  }

  async feedReadAt(user: string): Promise<number | null> {
    const value = await this.redis.hget(this.keys.cursors(user), FEED_CURSOR);
    return value === null ? null : Number(value);
  }

  async advanceFeedReadAt(user: string, to: number): Promise<number> {
    return Number(await this.run.advanceCursor([this.keys.cursors(user)], [FEED_CURSOR, to]));
  }

  advanceFeedReadAtOfMany(moves: readonly CursorMove[]): Promise<number[]> {
    const { keys } = this;
    return advanceCursorFields(
      this.run,
      this.spread,
      FEED_CURSOR,
      moves.map(({ user, to }) => ({ key: keys.cursors(user), to })),
    );
  }
}
