/**
 * What the start-up check says about a Redis's settings, by what the server is to bubble: the
 * store must neither evict nor forget; a lock master must not evict, and may keep nothing on
 * disk (the store's fencing tokens cover a lock master that restarted empty).
 */
import { assessRedisSettings, type RedisSettings } from '@bubble/cli';
import { describe, expect, it } from 'vitest';

const durable: RedisSettings = {
  maxmemoryPolicy: 'noeviction',
  maxmemory: '0',
  appendonly: true,
  save: '',
  source: 'config',
};
const ephemeral: RedisSettings = { ...durable, appendonly: false, save: '' };

describe('assessRedisSettings', () => {
  it('finds nothing wrong with noeviction and AOF, for either purpose', () => {
    expect(assessRedisSettings(durable, 'store')).toEqual([]);
    expect(assessRedisSettings(durable, 'lock quorum')).toEqual([]);
  });

  it('a store that persists nothing is a risk; a lock master that persists nothing is not', () => {
    const [risk] = assessRedisSettings(ephemeral, 'store');
    expect(risk).toContain('nothing is persisted');
    expect(assessRedisSettings(ephemeral, 'lock quorum')).toEqual([]);
  });

  it('RDB save points alone count as persistence', () => {
    expect(assessRedisSettings({ ...ephemeral, save: '3600 1' }, 'store')).toEqual([]);
  });

  it('eviction is a risk for both, and a volatile policy names the keys with a TTL', () => {
    for (const purpose of ['store', 'lock quorum'] as const) {
      expect(assessRedisSettings({ ...durable, maxmemoryPolicy: 'allkeys-lru' }, purpose)).toEqual([
        expect.stringContaining('evicts any key'),
      ]);
      expect(assessRedisSettings({ ...durable, maxmemoryPolicy: 'volatile-ttl' }, purpose)).toEqual(
        [expect.stringContaining('pool locks and leader key')],
      );
    }
  });

  it('settings it could not read are not reported as risks', () => {
    const unread: RedisSettings = {
      maxmemoryPolicy: null,
      maxmemory: null,
      appendonly: null,
      save: null,
      source: 'info',
    };
    expect(assessRedisSettings(unread, 'store')).toEqual([]);
  });
});
