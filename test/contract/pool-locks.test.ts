/**
 * The PoolLocks contract (packages/store/src/pool-locks/pool-locks.ts) on the memory engine and on
 * Redlock over one redis-server, then Redlock's quorum behaviour over three independent servers:
 * granted with a majority up, refused without one, and a holder that loses its majority is told
 * through its signal before its lock's validity runs out.
 */
import {
  MemoryPoolLocks,
  RedisKeys,
  RedlockPoolLocks,
  type HeldLock,
  type PoolLocks,
} from '@bubble/store';
import {
  startRedisServer,
  uniquePrefix,
  waitFor,
  type RedisServerHandle,
} from '@bubble/test-utils';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
// Deep import: the store's barrel does not export this type.
import type { PoolLocksLogger } from '../../packages/store/src/pool-locks/pool-locks.js';
import { TEST_POOLS, describeEachEngine } from '../support/engines.js';

const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A lock client as production should make one: a server that is down fails commands at once. */
async function lockClient(url: string): Promise<Redis> {
  const client = new Redis(url, {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => 100,
  });
  // The quorum tests stop servers on purpose; their reconnect errors are expected.
  client.on('error', () => undefined);
  await client.connect();
  return client;
}

function recordingLogger(): PoolLocksLogger & { messages: string[] } {
  const messages: string[] = [];
  return { messages, warn: (_obj, msg) => void messages.push(msg) };
}

function expectHeld(lock: HeldLock | null, ttlMs: number): asserts lock is HeldLock {
  expect(lock).not.toBeNull();
  const validUntil = lock!.validUntil();
  const now = Date.now();
  expect(lock!.signal.aborted).toBe(false);
  expect(validUntil).toBeGreaterThan(now);
  expect(validUntil).toBeLessThanOrEqual(now + ttlMs);
}

describeEachEngine('pool locks contract', (ctx, engine) => {
  const cleanups: Array<() => Promise<void> | void> = [];
  let shared: MemoryPoolLocks | undefined;

  afterEach(async () => {
    shared = undefined;
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  /** The locks one process holds: in memory the test's one instance, for Redis its own client. */
  async function processLocks(): Promise<PoolLocks> {
    if (engine === 'memory') {
      if (!shared) {
        const locks = (shared = new MemoryPoolLocks());
        cleanups.push(() => locks.close());
      }
      return shared;
    }
    const { redisUrl, prefix } = ctx();
    const client = await lockClient(redisUrl!);
    const locks = new RedlockPoolLocks({
      clients: [client],
      keys: new RedisKeys(prefix!, TEST_POOLS),
    });
    cleanups.push(
      () => client.disconnect(),
      () => locks.close(),
    );
    return locks;
  }

  it('grants a pool to one holder at a time', async () => {
    const [p1, p2] = [await processLocks(), await processLocks()];
    const held = await p1.tryAcquire(1, 5_000);
    expectHeld(held, 5_000);
    expect(await p2.tryAcquire(1, 5_000)).toBeNull();
    expect(await p1.tryAcquire(1, 5_000)).toBeNull();
    expectHeld(await p2.tryAcquire(2, 5_000), 5_000);
  });

  it('lets another holder in once released, and releasing twice is harmless', async () => {
    const [p1, p2] = [await processLocks(), await processLocks()];
    const held = await p1.tryAcquire(1, 5_000);
    expectHeld(held, 5_000);
    await held.release();
    expect(held.signal.aborted).toBe(true);
    expect(held.validUntil()).toBeLessThanOrEqual(Date.now());
    await held.release();
    expectHeld(await p2.tryAcquire(1, 5_000), 5_000);
  });

  it('keeps extending a held lock well past its ttl', async () => {
    const ttl = 300;
    const [p1, p2] = [await processLocks(), await processLocks()];
    const held = await p1.tryAcquire(4, ttl);
    expectHeld(held, ttl);
    const until = Date.now() + 3 * ttl;
    let attempts = 0;
    while (Date.now() < until) {
      expect(await p2.tryAcquire(4, ttl)).toBeNull();
      attempts++;
      await delay(50);
    }
    expect(attempts).toBeGreaterThan(5);
    expectHeld(held, ttl);
  });

  it('releases every held lock on close and grants no more', async () => {
    const [p1, p2] = [await processLocks(), await processLocks()];
    const a = await p1.tryAcquire(1, 5_000);
    const b = await p1.tryAcquire(2, 5_000);
    expectHeld(a, 5_000);
    expectHeld(b, 5_000);
    await p1.close();
    expect([a.signal.aborted, b.signal.aborted]).toEqual([true, true]);
    expect(await p1.tryAcquire(3, 5_000)).toBeNull();
    if (engine === 'redis') {
      expectHeld(await p2.tryAcquire(1, 5_000), 5_000);
      expectHeld(await p2.tryAcquire(2, 5_000), 5_000);
    }
  });

  it('rejects a ttl that is not a positive whole number of ms', async () => {
    const locks = await processLocks();
    await expect(locks.tryAcquire(1, 0)).rejects.toThrow(RangeError);
    await expect(locks.tryAcquire(1, 1.5)).rejects.toThrow(RangeError);
  });
});

describe('RedlockPoolLocks over a quorum of three servers', () => {
  let servers: RedisServerHandle[] = [];
  const frozen = new Set<RedisServerHandle>();
  const clients: Redis[] = [];
  let keys: RedisKeys;

  beforeEach(async () => {
    servers = await Promise.all([startRedisServer(), startRedisServer(), startRedisServer()]);
    keys = new RedisKeys(uniquePrefix(), TEST_POOLS);
  });

  afterEach(async () => {
    for (const client of clients.splice(0)) client.disconnect();
    for (const server of frozen) server.kill('SIGCONT');
    frozen.clear();
    await Promise.all(servers.map((server) => server.stop()));
  });

  /** One process's view of the quorum: its own connection to each of the three servers. */
  async function quorumLocks(logger?: PoolLocksLogger): Promise<RedlockPoolLocks> {
    const own = await Promise.all(servers.map((server) => lockClient(server.url)));
    clients.push(...own);
    return new RedlockPoolLocks({ clients: own, keys, ...(logger ? { logger } : {}) });
  }

  /** Pool 1 held for `ttlMs` through a quorum view whose warnings are recorded. */
  async function heldOnQuorum(ttlMs: number) {
    const logger = recordingLogger();
    const held = await (await quorumLocks(logger)).tryAcquire(1, ttlMs);
    expectHeld(held, ttlMs);
    return { logger, held };
  }

  it('grants a lock with 2 of 3 servers up, still to one holder only', async () => {
    const [p1, p2] = [await quorumLocks(), await quorumLocks()];
    await servers[2]!.stop();
    const held = await p1.tryAcquire(1, 5_000);
    expectHeld(held, 5_000);
    expect(await p2.tryAcquire(1, 5_000)).toBeNull();
    await held.release();
    expectHeld(await p2.tryAcquire(1, 5_000), 5_000);
  });

  it('refuses a lock with only 1 of 3 servers up, and says why', async () => {
    const logger = recordingLogger();
    const locks = await quorumLocks(logger);
    await Promise.all([servers[0]!.stop(), servers[1]!.stop()]);
    expect(await locks.tryAcquire(1, 5_000)).toBeNull();
    await waitFor(() => logger.messages.length > 0, { message: 'no warning logged' });
    expect(logger.messages).toEqual(['pool lock: servers failed while acquiring']);
  });

  it('aborts the signal within the validity once 2 of 3 servers are gone', async () => {
    const ttl = 300;
    const { logger, held } = await heldOnQuorum(ttl);
    servers[0]!.kill('SIGKILL');
    servers[1]!.kill('SIGKILL');
    const validUntil = held.validUntil();
    await waitFor(() => held.signal.aborted, {
      timeoutMs: validUntil - Date.now() + 150,
      message: 'signal not aborted before the lock expired',
    });
    expect(held.validUntil()).toBeLessThanOrEqual(Date.now());
    expect(logger.messages).toContain('pool lock lost');
  });

  it('aborts the signal by the lock expiry when 2 of 3 servers stop answering', async () => {
    const ttl = 300;
    const { logger, held } = await heldOnQuorum(ttl);
    // Frozen servers keep their connections open: the extension neither wins nor fails.
    for (const server of servers.slice(0, 2)) {
      server.kill('SIGSTOP');
      frozen.add(server);
    }
    let abortedAt = 0;
    held.signal.addEventListener('abort', () => (abortedAt = Date.now()));
    const validUntil = held.validUntil();
    await waitFor(() => held.signal.aborted, {
      timeoutMs: validUntil - Date.now() + 150,
      message: 'signal not aborted before the lock expired',
    });
    // Lost by the expiry watchdog, not by a failed extension: nothing failed.
    expect(abortedAt).toBeGreaterThanOrEqual(validUntil - 2);
    expect(logger.messages).toContain('pool lock lost');
    // The release sent to the frozen servers gets no quorum; it gives up after a ttl.
    const releasing = Date.now();
    await held.release();
    expect(Date.now() - releasing).toBeLessThan(ttl + 300);
  });
});
