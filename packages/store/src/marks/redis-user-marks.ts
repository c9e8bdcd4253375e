import { idRecord, poolOf, usersByPool } from '@bubble/protocol';
import type { LoggedWriterOptions } from '../change-log/redis-change-log.js';
import { RedisLoggedWriter } from '../change-log/redis-logged-writer.js';
import type { CursorMove } from '../cursors/read-cursors.js';
import { advanceCursorFields } from '../cursors/redis-cursor-moves.js';
import { ScriptStatus } from '../redis/script-status.js';
import { slotSpreadOf } from '../redis/slot-spread.js';
import { marksEventsByPool } from './marks-events.js';
import { SIGHT_THROTTLE_MS, type UserMarks, type UserMarksState } from './user-marks.js';

const CLICK_PREFIX = 'r:';
/** Set with the first sight's cursor until its `marks` event is in the pool log (seeUser-1). */
const UNLOGGED_FIELD = 'unlogged';
/** The notice cursor's field in the user's marks hash. */
const SEEN_FIELD = 'seen';

export class RedisUserMarks extends RedisLoggedWriter implements UserMarks {
  private readonly spread = slotSpreadOf(this.redis);
  /** With a sources endpoint the inactive-user drop takes the user's follows too. */
  private readonly dropSources: boolean;

  constructor(shared: LoggedWriterOptions, lifecycle: { dropSources?: boolean } = {}) {
    super(shared);
    this.dropSources = lifecycle.dropSources ?? false;
  }

  async see(
    user: string,
    now: number,
    highestNoticeId: () => Promise<number>,
  ): Promise<{ seen: number; first: boolean }> {
    const key = this.keys.marks(user);
    let [seen, touched, owed] = await this.run.seeUser([key], [now, '-', SIGHT_THROTTLE_MS]);
    const first = seen === ScriptStatus.Refused;
    if (first) {
      const highest = await highestNoticeId();
      [seen, touched, owed] = await this.run.seeUser(
        [key],
        [now, String(highest), SIGHT_THROTTLE_MS],
      );
    }
    if (touched === 1) await this.redis.zadd(this.keys.lastSeen(), now, user);
    // A core holding the user counted no notices while they were unseen: it reloads their marks.
    if (owed === 1) {
      for (const [pool, events] of marksEventsByPool([user], this.keys.pools)) {
        await this.log.appendPoolEvents(pool, events);
      }
      await this.redis.hdel(key, UNLOGGED_FIELD);
    }
    return { seen: Number(seen), first };
  }

  async state(user: string): Promise<UserMarksState> {
    return decodeMarks(await this.redis.hgetall(this.keys.marks(user)));
  }

  async advanceSeen(user: string, to: number): Promise<number> {
    return Number(await this.run.advanceCursor([this.keys.marks(user)], [SEEN_FIELD, to]));
  }

  advanceSeenOfMany(moves: readonly CursorMove[]): Promise<number[]> {
    const { keys } = this;
    return advanceCursorFields(
      this.run,
      this.spread,
      SEEN_FIELD,
      moves.map(({ user, to }) => ({ key: keys.marks(user), to })),
    );
  }

  async click(user: string, names: readonly string[], at: number): Promise<void> {
    if (names.length === 0) return;
    const args: (string | number)[] = [];
    for (const name of names) args.push(CLICK_PREFIX + name, at);
    await this.redis.hset(this.keys.marks(user), ...args);
  }

  async dropInactive(before: number, limit: number, now: number): Promise<string[]> {
    const { keys } = this;
    const index = keys.lastSeen();
    const candidates = await this.redis.zrangebyscore(index, '-inf', before, 'LIMIT', 0, limit);
    const online = await Promise.all(
      candidates.map((user) =>
        this.run.checkOnline([keys.online(poolOf(user, keys.pools))], [user]),
      ),
    );
    // A user online through presence (a live connection counts) is seen now: kept, and their
    // sight moves so the index does not offer them again run after run.
    const outcomes = await Promise.all(
      candidates.map(async (user, i) => {
        if (online[i] === 1) {
          await this.redis.hset(keys.marks(user), 'at', now);
          return now;
        }
        return this.run.dropInactiveUser(keys.inactiveUserKeys(user, this.dropSources), [before]);
      }),
    );
    const dropped = candidates.filter((_, i) => outcomes[i] === 0);
    // Their badge states and offline entries live in the pools' slots: deleted next, and again
    // by a run that finds them once more after a failure in between.
    await Promise.all(
      [...usersByPool(dropped, keys.pools)].flatMap(([pool, users]) => [
        this.redis.hdel(keys.badges(pool), ...users),
        this.redis.zrem(keys.offlineSince(pool), ...users),
        this.redis.hdel(keys.routes(pool), ...users),
        this.redis.srem(keys.touched(pool), ...users),
      ]),
    );
    // Logged before the index forgets them: a run cut in between finds them again
    // (dropInactiveUser answers 0 for keys already gone) and logs them again.
    await Promise.all(
      [...marksEventsByPool(dropped, keys.pools)].map(([pool, events]) =>
        this.log.appendPoolEvents(pool, events),
      ),
    );
    if (candidates.length > 0) {
      await this.run.settleSights(
        [index],
        [before, ...candidates.flatMap((user, i) => [user, outcomes[i]!])],
      );
    }
    return dropped;
  }
}

export function decodeMarks(raw: Record<string, string>): UserMarksState {
  const clicks = idRecord<number>();
  for (const [field, value] of Object.entries(raw)) {
    if (field.startsWith(CLICK_PREFIX)) clicks[field.slice(CLICK_PREFIX.length)] = Number(value);
  }
  return { seen: raw.seen === undefined ? null : Number(raw.seen), clicks };
}
