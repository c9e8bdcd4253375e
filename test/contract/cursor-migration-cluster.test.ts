/**
 * `POST /v1/cursors`' setters and use case on a real 3-master Redis Cluster: users and
 * conversations spread over every shard, each move in its own slot's call (the keys of one
 * user share {u:<user>}, those of one conversation {c:<id>}), the pools told in their own logs.
 */
import { BadgeService } from '@bubble/badges';
import { ManualClock } from '@bubble/protocol';
import { LOG_START, RedisStore } from '@bubble/store';
import { uniquePrefix } from '@bubble/test-utils';
import { afterEach, describe, expect, it } from 'vitest';
import { T0 } from '../support/engines.js';
import { useRedisCluster } from '../support/redis-cluster.js';

const POOLS = 8;

describe('cursor migration on a 3-master Redis Cluster', () => {
  const cluster = useRedisCluster();
  let store: RedisStore | undefined;
  afterEach(async () => {
    await store?.close();
    store = undefined;
  });

  it('moves feed, notice and conversation cursors of users on every shard', async () => {
    store = new RedisStore({
      clusterNodes: cluster.nodes,
      keyPrefix: uniquePrefix('migrate'),
      pools: POOLS,
    });
    const clock = new ManualClock(T0);
    const service = new BadgeService(store, clock);
    const users = Array.from({ length: 60 }, (_, i) => `user-${i}`);
    const conversations = Array.from({ length: 30 }, (_, i) => `conv-${i}`);
    for (const [i, id] of conversations.entries()) {
      await service.replaceMembers(id, [users[i]!, users[i + 30]!]);
      await service.ingestMessages(id, [{ seq: 5, from: 'platform', ts: T0 - 1000 }]);
    }
    await service.publishNotice(3);
    await service.publishNotice(4);
    await service.follow(users[0]!, 'author');
    await service.ingestPosts([
      { author: 'author', id: 'old', ts: T0 - 2000 },
      { author: 'author', id: 'new', ts: T0 - 10 },
    ]);
    // Members joined before the messages: every one of them has 5 unread.
    const before = await service.badge(users[0]!);
    expect({ feed: before.feed, conversations: before.conversations }).toEqual({
      feed: 2,
      conversations: { 'conv-0': 5 },
    });

    const result = await service.migrateCursors({
      users: users.map((user, i) => ({
        user,
        feed: T0 - 1000,
        notices: 3,
        conversations: { [conversations[i % 30]!]: 4, 'conv-not-mine': 2 },
      })),
    });
    expect(result).toEqual({ accepted: 60 });

    for (const user of [users[0]!, users[17]!, users[59]!]) {
      expect(await store.cursors.feedReadAt(user)).toBe(T0 - 1000);
      expect((await store.marks.state(user)).seen).toBe(3);
    }
    const badge = await service.badge(users[0]!);
    expect({
      feed: badge.feed,
      notices: badge.notices,
      conversations: badge.conversations,
    }).toEqual({ feed: 1, notices: 1, conversations: { 'conv-0': 1 } });

    const reads = await store.changes.readPoolEvents(
      Array.from({ length: POOLS }, (_, pool) => ({ pool, after: LOG_START })),
      10_000,
    );
    const events = [...reads.values()].flatMap((read) => read.entries.map((e) => e.event));
    for (const user of users) {
      expect(events).toContainEqual({ kind: 'cursor', user, readAt: T0 - 1000 });
      expect(events).toContainEqual({ kind: 'marks', user });
    }
  }, 60_000);
});
