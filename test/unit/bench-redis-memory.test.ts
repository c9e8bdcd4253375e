/**
 * bench memory sorts Redis keys by what they hold; the names come from the store's RedisKeys, so
 * a key renamed there must still land in its class here (or the sizing figures silently move).
 */
import { RedisKeys } from '@bubble/store';
import { describe, expect, it } from 'vitest';
import { keyClass } from '../../packages/bench/src/redis-memory.js';

describe('bench memory key classes', () => {
  const keys = new RedisKeys('ub', 100);

  it('puts every per-user key and per-pool share in its class', () => {
    expect(keyClass(keys.follows('u1'))).toBe('follows');
    expect(keyClass(keys.topics('u1'))).toBe('follows');
    expect(keyClass(keys.sourcesFetch('u1'))).toBe('follows');
    expect(keyClass(keys.legacyFollows('u1'))).toBe('follows');
    expect(keyClass(keys.legacyTopics('u1'))).toBe('follows');
    expect(keyClass(keys.cursors('u1'))).toBe('cursors');
    expect(keyClass(keys.marks('u1'))).toBe('marks');
    expect(keyClass(keys.lastSeen())).toBe('lastSeen');
    expect(keyClass(keys.badges(7))).toBe('badges');
    expect(keyClass(keys.online(7))).toBe('presence');
    expect(keyClass(keys.routes(7))).toBe('routes');
    expect(keyClass(keys.touched(7))).toBe('touched');
    expect(keyClass(keys.offlineSince(7))).toBe('offline');
    expect(keyClass(keys.userConversations('u1'))).toBe('conversations');
    expect(keyClass(keys.conversationMembers('c1'))).toBe('conversations');
  });

  it('keeps posts, the capped logs and cluster state out of the per-user figures', () => {
    expect(keyClass(keys.posts('a1'))).toBe('posts');
    expect(keyClass(keys.deletedPosts('a1'))).toBe('posts');
    expect(keyClass(keys.poolEvents(7))).toBe('logs');
    expect(keyClass(keys.postEvents())).toBe('logs');
    expect(keyClass(keys.sharedEvents())).toBe('logs');
    for (const key of [keys.fence(7), keys.assignment(), keys.sweepReports(), keys.leader()]) {
      expect(keyClass(key)).toBe('cluster');
    }
  });

  it('does not take a user or author id that looks like a suffix for the kind', () => {
    expect(keyClass(keys.follows('posts'))).toBe('follows');
    expect(keyClass(keys.topics('posts'))).toBe('follows');
    expect(keyClass(keys.posts('follows'))).toBe('posts');
  });
});
