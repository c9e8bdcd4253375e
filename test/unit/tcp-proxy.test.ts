/**
 * The fault tests' TCP proxy against a real redis-server: it forwards, a cut after the reply
 * leaves the command applied and its reply lost, a cut on send leaves it never applied, and
 * while cut it refuses new connections until healed.
 */
import { startRedisServer, TcpProxy, type RedisServerHandle } from '@bubble/test-utils';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';

/** A client that neither reconnects nor resends, so each failure shows as it happens. */
function oneShotClient(url: string): Redis {
  return new Redis(url, { retryStrategy: () => null, maxRetriesPerRequest: 0 });
}

describe('TcpProxy', () => {
  let server: RedisServerHandle;
  let admin: Redis;
  let proxy: TcpProxy;
  const clients: Redis[] = [];

  const client = (): Redis => {
    const made = oneShotClient(proxy.url);
    made.on('error', () => {});
    clients.push(made);
    return made;
  };

  beforeAll(async () => {
    server = await startRedisServer();
    admin = new Redis(server.url);
  });

  beforeEach(async () => {
    for (const made of clients.splice(0)) made.disconnect();
    await proxy?.close();
    proxy = await TcpProxy.start({ port: server.port });
    await admin.flushall();
  });

  afterAll(async () => {
    for (const made of clients.splice(0)) made.disconnect();
    await proxy?.close();
    admin?.disconnect();
    await server?.stop();
  });

  it('forwards commands and replies both ways', async () => {
    const redis = client();
    await redis.set('k', 'v');
    expect(await redis.get('k')).toBe('v');
    expect(proxy.openConnections).toBe(1);
    expect(proxy.cutCount).toBe(0);
  });

  it('cutAfterReply: the command runs, its reply is lost, new connections wait for heal()', async () => {
    const redis = client();
    await redis.ping();
    const cut = proxy.cutAfterReply(/cut-me/);
    await expect(redis.set('cut-me', '1')).rejects.toThrow();
    await cut;
    expect(await admin.get('cut-me')).toBe('1');
    expect(proxy.cutCount).toBe(1);

    await expect(client().ping()).rejects.toThrow();
    proxy.heal();
    expect(await client().get('cut-me')).toBe('1');
  });

  it('cutOnSend: the command never reaches the target', async () => {
    const redis = client();
    await redis.set('before', '1');
    const cut = proxy.cutOnSend(/never-sent/);
    await expect(redis.set('never-sent', '1')).rejects.toThrow();
    await cut;
    expect(await admin.get('never-sent')).toBeNull();
    expect(await admin.get('before')).toBe('1');
    proxy.heal();
    expect(await client().get('before')).toBe('1');
  });

  it('only a matching chunk triggers; cutAll cuts every connection at once', async () => {
    const redis = client();
    const other = client();
    void proxy.cutOnSend(/never-sent/);
    await redis.set('plain', '1');
    expect(await other.get('plain')).toBe('1');
    expect(proxy.cutCount).toBe(0);
    proxy.disarm();
    proxy.cutAll();
    await expect(redis.ping()).rejects.toThrow();
    await expect(other.ping()).rejects.toThrow();
    proxy.heal();
    expect(await client().ping()).toBe('PONG');
  });
});
