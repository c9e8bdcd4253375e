/**
 * A redis-server for the calling describe block: started before its tests and stopped after them,
 * with one ioredis client on it for the tests' own commands (disconnected first).
 */
import { startRedisServer, type RedisServerHandle } from '@bubble/test-utils';
import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';

export interface RedisServerRig {
  readonly server: RedisServerHandle;
  /** A client of the tests' own, beside what they test. */
  readonly admin: Redis;
}

export function useRedisServer(): RedisServerRig {
  let server: RedisServerHandle | undefined;
  let admin: Redis | undefined;
  beforeAll(async () => {
    server = await startRedisServer();
    admin = new Redis(server.url);
  });
  afterAll(async () => {
    admin?.disconnect();
    await server?.stop();
  });
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the redis-server is not started yet');
    return value;
  };
  return {
    get server() {
      return started(server);
    },
    get admin() {
      return started(admin);
    },
  };
}
