import { Writable } from 'node:stream';
import { PoolTenures } from '@bubble/core';
import { MemoryPoolLocks, MemoryStore, type HeldLock, type PoolLocks } from '@bubble/store';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';

/** Memory locks whose releases wait until let go: a quorum server that is slow to answer. */
class SlowReleaseLocks implements PoolLocks {
  private readonly inner = new MemoryPoolLocks();
  private readonly waiting: (() => void)[] = [];

  async tryAcquire(pool: number, ttlMs: number): Promise<HeldLock | null> {
    const lock = await this.inner.tryAcquire(pool, ttlMs);
    if (!lock) return null;
    return {
      resource: lock.resource,
      signal: lock.signal,
      validUntil: () => lock.validUntil(),
      release: () =>
        new Promise<void>((resolve) => this.waiting.push(resolve)).then(() => lock.release()),
    };
  }

  letReleasesGo(): void {
    for (const go of this.waiting.splice(0)) go();
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}

describe('PoolTenures', () => {
  it("logs 'pool dropped' when it lets the pool go, not after its lock's release answers", async () => {
    const lines: { msg: string; pool?: number; pools?: number[] }[] = [];
    const log = pino(
      { level: 'info' },
      new Writable({
        write(chunk: Buffer, _encoding, done) {
          lines.push(JSON.parse(chunk.toString()) as (typeof lines)[number]);
          done();
        },
      }),
    );
    const store = new MemoryStore({ pools: 4 });
    const locks = new SlowReleaseLocks();
    const tenures = new PoolTenures({
      id: 'core-a',
      store,
      locks,
      log,
      leaseMs: 10_000,
      expirePerSweep: 100,
      release: () => {},
    });
    await tenures.follow({ generation: 1, owners: ['core-a', 'core-a', null, null] });
    expect(tenures.pools).toEqual([0, 1]);

    const dropping = tenures.dropAll('cut off from the store');
    // Synchronous with letting go: a log reader sees the pools gone while the releases wait.
    expect(tenures.size).toBe(0);
    expect(lines.filter((l) => l.msg === 'pool dropped').map((l) => l.pool)).toEqual([0, 1]);
    locks.letReleasesGo();
    await dropping;

    // Taken again after the drop: the log reads as held, in order.
    await tenures.follow({ generation: 2, owners: ['core-a', 'core-a', null, null] });
    const held = new Set<number>();
    for (const line of lines) {
      if (line.msg === 'pools taken') for (const pool of line.pools!) held.add(pool);
      else if (line.msg === 'pool dropped') held.delete(line.pool!);
    }
    expect([...held].sort()).toEqual(tenures.pools);
    await store.close();
  });
});
