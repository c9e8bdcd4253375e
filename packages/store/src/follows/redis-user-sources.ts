import type { SourcesAnswer } from '@bubble/protocol';
import type { FeedInputs } from '../bubble-store/bubble-store.js';
import { FEED_CURSOR } from '../cursors/redis-read-cursors.js';
import type { RedisClient } from '../redis/connect.js';
import type { RedisKeys } from '../redis/keys.js';
import type { ScriptRunner } from '../redis/scripts.js';
import { decodeFollowList } from './follow-list.js';
import type { UserSources } from './user-sources.js';

/**
 * UserSources of the Redis engine: a user's sources are held while their authors list exists.
 * Every key a call touches carries the user's tag {u:<user>}: one script per user, which
 * ioredis auto-pipelines into one write per server (per node on Redis Cluster).
 */
export class RedisUserSources implements UserSources {
  constructor(
    private readonly redis: RedisClient,
    private readonly run: ScriptRunner,
    private readonly keys: RedisKeys,
    readonly onDemand: boolean,
    private readonly feedInputs: (user: string) => Promise<FeedInputs>,
  ) {}

  async held(users: readonly string[]): Promise<boolean[]> {
    if (!this.onDemand) return users.map(() => true);
    const found = await Promise.all(
      users.map((user) => this.redis.exists(this.keys.follows(user))),
    );
    return found.map((count) => count === 1);
  }

  async beginFetch(users: readonly string[], ttlMs: number): Promise<void> {
    if (!this.onDemand) return;
    const { keys } = this;
    await Promise.all(
      users.map((user) =>
        this.run.beginFetch([keys.follows(user), keys.sourcesFetch(user)], [Math.ceil(ttlMs)]),
      ),
    );
  }

  async install(
    entries: readonly { user: string; answer: SourcesAnswer }[],
    caps: { follows: number; topics: number },
  ): Promise<FeedInputs[]> {
    // Without an endpoint every user is held: each keeps what it holds.
    if (!this.onDemand) return Promise.all(entries.map(({ user }) => this.feedInputs(user)));
    const { keys } = this;
    return Promise.all(
      entries.map(async ({ user, answer }) => {
        // Each list once, as the Lua side writes the joined answer as it is.
        const answerFollows = [...new Set(answer.follows)];
        const answerTopics = [...new Set(answer.topics)];
        const [follows, topics, readAt] = await this.run.installSources(
          [
            keys.follows(user),
            keys.topics(user),
            keys.sourcesFetch(user),
            keys.cursors(user),
            keys.marks(user),
          ],
          [
            caps.follows,
            caps.topics,
            FEED_CURSOR,
            answer.readAt ?? '',
            answer.noticesSeen ?? '',
            answerFollows.join(','),
            answerTopics.join(','),
          ],
        );
        // The lists come back only when they are not the answer's (see installSources-5.lua).
        return {
          follows: follows === null ? answerFollows : decodeFollowList(follows),
          topics: topics === null ? answerTopics : decodeFollowList(topics),
          readAt: readAt === null ? null : Number(readAt),
          held: true,
        };
      }),
    );
  }
}
