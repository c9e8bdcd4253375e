/**
 * The store's clock (packages/store/src/store-clock.ts): the Redis engine's follows the server's
 * TIME; between samples it runs on this process's monotonic clock; it never goes back by less
 * than a second, and follows a larger step of the store's clock at once.
 */
import { RedisStore, StoreClock } from '@bubble/store';
import { uniquePrefix } from '@bubble/test-utils';
import { describe, expect, it } from 'vitest';
import { useRedisServer } from '../support/redis-server.js';

/** A store clock whose store time is `storeTime()` (the test moves it), answered at once. */
function clockOver(storeTime: () => number): StoreClock {
  return new StoreClock({ read: async () => storeTime() });
}

describe('StoreClock', () => {
  it("is this host's clock before the first sample, the store's after it", async () => {
    const clock = clockOver(() => Date.now() + 30_000);
    expect(Math.abs(clock.now() - Date.now())).toBeLessThan(50);
    const sample = await clock.sync();
    expect(sample.offsetMs).toBeGreaterThan(-30_050);
    expect(sample.offsetMs).toBeLessThan(-29_950);
    expect(Math.abs(clock.now() - (Date.now() + 30_000))).toBeLessThan(50);
  });

  it('never goes back for a sample slightly behind; follows a step of more than a second', async () => {
    let offset = 0;
    const clock = clockOver(() => Date.now() + offset);
    await clock.sync();
    const before = clock.now();
    offset = -500;
    await clock.sync();
    const held = clock.now();
    expect(held).toBeGreaterThanOrEqual(before);
    offset = -60_000;
    await clock.sync();
    expect(Math.abs(clock.now() - (Date.now() - 60_000))).toBeLessThan(50);
  });

  it('a sample whose round trip is far slower than the recent ones does not move it', async () => {
    let offset = 0;
    let delayMs = 0;
    const clock = new StoreClock({
      read: async () => {
        const at = Date.now() + offset;
        if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
        return at;
      },
    });
    await clock.sync();
    await clock.sync();
    offset = 5_000;
    delayMs = 200;
    const slow = await clock.sync();
    expect(slow.roundTripMs).toBeGreaterThan(150);
    expect(Math.abs(clock.now() - Date.now())).toBeLessThan(50);
    delayMs = 0;
    await clock.sync();
    expect(Math.abs(clock.now() - (Date.now() + 5_000))).toBeLessThan(50);
  });
});

describe("RedisStore's clock", () => {
  const redis = useRedisServer();

  it("follows the server's TIME once synced, within the read's round trip", async () => {
    const store = new RedisStore({ url: redis.server.url, keyPrefix: uniquePrefix(), pools: 4 });
    try {
      const samples: number[] = [];
      await store.syncClock({ onSample: (s) => samples.push(s.roundTripMs) });
      expect(samples).toHaveLength(1);
      const sentAt = performance.now();
      const [seconds, micros] = await redis.admin.time();
      const roundTrip = performance.now() - sentAt;
      const serverMs = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
      expect(Math.abs(store.clock.now() - serverMs)).toBeLessThanOrEqual(
        Math.ceil(roundTrip + samples[0]! / 2) + 2,
      );
    } finally {
      await store.close();
    }
  });
});
