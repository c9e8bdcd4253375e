/**
 * A store connection whose peer falls silent (the socket stays open, nothing comes back: a
 * partition, a NAT entry gone) is destroyed once a command has waited SOCKET_SILENCE_MS without
 * a byte, and reconnected: ioredis itself only fails each command on its timeout and keeps the
 * dead socket for good. Real redis-server behind the TCP proxy of the test utilities.
 */
import { connectRedis, type RedisClient } from '@bubble/store';
import { TcpProxy, startRedisServer, waitFor, type RedisServerHandle } from '@bubble/test-utils';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SOCKET_SILENCE_MS } from '../../packages/store/src/redis/connect.js';

let redis: RedisServerHandle;
let proxy: TcpProxy;
let client: RedisClient;

beforeAll(async () => {
  redis = await startRedisServer();
  proxy = await TcpProxy.start({ port: redis.port });
  client = connectRedis({ url: proxy.url }, 'silent-connection-test');
});

afterAll(async () => {
  client?.disconnect();
  await proxy?.close();
  await redis?.stop();
});

it('replaces a socket that fell silent, and answers again once the network does', async () => {
  expect(await client.ping()).toBe('PONG');
  const opened = proxy.openConnections;
  proxy.silence();
  await expect(client.ping()).rejects.toThrow(/timed out|Socket timeout|closed/i);
  proxy.heal();
  const healedAt = Date.now();
  // A command sent now waits on the silent socket until the silence limit destroys it; the
  // reconnect reaches a connection that forwards again.
  await waitFor(async () => (await client.ping().catch(() => 'failed')) === 'PONG', {
    timeoutMs: SOCKET_SILENCE_MS + 10_000,
    intervalMs: 200,
  });
  expect(Date.now() - healedAt).toBeLessThan(SOCKET_SILENCE_MS + 10_000);
  expect(proxy.openConnections).toBeGreaterThanOrEqual(opened);
}, 40_000);
