/**
 * Each role reads its Redis's eviction and persistence settings at start (docs/operations.md,
 * "Redis as bubble needs it") and logs one warning naming the risk, in its JSON log; settings
 * that fit get none; a server that refuses CONFIG is read through INFO, and one that refuses
 * both gets an info line. Never a failed start: the role listens and /readyz answers 200.
 */
import {
  startRedisCluster,
  startRedisServer,
  waitFor,
  type LogLine,
  type RedisClusterHandle,
  type RedisServerHandle,
  type RoleProcess,
} from '@bubble/test-utils';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildOnce } from '../support/build.js';
import { Deployment } from '../ws/processes.js';

const WARN = 40;

async function denyCommands(server: RedisServerHandle, commands: string[]): Promise<void> {
  const admin = new Redis(server.url);
  try {
    await admin.call('ACL', 'SETUSER', 'default', ...commands.map((command) => `-${command}`));
  } finally {
    admin.disconnect();
  }
}

const settingsLines = (proc: RoleProcess): LogLine[] =>
  proc.lines.filter((line) => line.module === 'redis-settings');

async function settingsLine(
  proc: RoleProcess,
  redisPort: number,
  purpose = 'store',
): Promise<LogLine> {
  const line = await waitFor(
    () =>
      settingsLines(proc).find(
        (l) => l.redis === `127.0.0.1:${redisPort}` && l.purpose === purpose,
      ),
    { timeoutMs: 15_000, message: `no Redis settings line\n${proc.describe()}` },
  );
  return line!;
}

describe('the Redis settings check at start', () => {
  let deployment: Deployment;
  let evicting: RedisServerHandle;
  let volatile: RedisServerHandle;
  let durable: RedisServerHandle;
  let configRefused: RedisServerHandle;
  let allRefused: RedisServerHandle;
  let cluster: RedisClusterHandle;

  beforeAll(async () => {
    await buildOnce();
    [deployment, evicting, volatile, durable, configRefused, allRefused, cluster] =
      await Promise.all([
        Deployment.start(),
        startRedisServer({
          args: ['--maxmemory-policy', 'allkeys-lru', '--appendonly', 'no', '--save', ''],
        }),
        startRedisServer({ args: ['--maxmemory-policy', 'volatile-lru', '--appendonly', 'yes'] }),
        startRedisServer({
          args: ['--maxmemory-policy', 'noeviction', '--appendonly', 'yes'],
        }),
        startRedisServer(),
        startRedisServer(),
        startRedisCluster({ masters: 3 }),
      ]);
    // What managed Redis does: CONFIG refused (and, for the second, INFO too). Set once the
    // servers are up, since starting one waits on its INFO.
    await denyCommands(configRefused, ['config']);
    await denyCommands(allRefused, ['config', 'info']);
  }, 300_000);

  afterAll(async () => {
    await deployment?.close();
    await Promise.allSettled(
      [evicting, volatile, durable, configRefused, allRefused, cluster].map((h) => h?.stop()),
    );
  });

  it.each(['server', 'core', 'gateway', 'all'] as const)(
    'bubble %s on allkeys-lru without persistence warns of both, and still starts ready',
    async (role) => {
      const proc = await deployment.spawn(role, { REDIS_URL: evicting.url });
      const line = await settingsLine(proc, evicting.port);
      expect(line.level).toBe(WARN);
      expect(line).toMatchObject({ maxmemoryPolicy: 'allkeys-lru', appendonly: false, save: '' });
      expect(line.msg).toContain('maxmemory-policy is allkeys-lru');
      expect(line.msg).toContain('nothing is persisted');
      expect(line.risks).toHaveLength(2);
      expect((await fetch(`${proc.url}/readyz`)).status).toBe(200);
    },
  );

  it('volatile-lru is a risk too: presence and routes carry TTLs', async () => {
    const proc = await deployment.spawn('gateway', { REDIS_URL: volatile.url });
    const line = await settingsLine(proc, volatile.port);
    expect(line.level).toBe(WARN);
    expect(line.msg).toContain('volatile-lru');
    expect(line.msg).toContain('TTL');
    expect(line.msg).not.toContain('nothing is persisted');
  });

  it('noeviction with AOF gets no warning', async () => {
    const proc = await deployment.spawn('gateway', { REDIS_URL: durable.url });
    const line = await settingsLine(proc, durable.port);
    expect(line.level).toBeLessThan(WARN);
    expect(line).toMatchObject({ maxmemoryPolicy: 'noeviction', appendonly: true });
    expect(line.msg).toContain('fit bubble');
    expect(settingsLines(proc).filter((l) => l.level >= WARN)).toEqual([]);
  });

  it('without CONFIG it reads INFO; without both it says it could not check, at info', async () => {
    const partly = await deployment.spawn('gateway', { REDIS_URL: configRefused.url });
    const viaInfo = await settingsLine(partly, configRefused.port);
    expect(viaInfo).toMatchObject({ source: 'info', maxmemoryPolicy: 'noeviction', save: null });
    expect(viaInfo.level).toBeLessThan(WARN);

    const blind = await deployment.spawn('gateway', { REDIS_URL: allRefused.url });
    const unchecked = await settingsLine(blind, allRefused.port);
    expect(unchecked.level).toBe(30);
    expect(unchecked.msg).toContain('could not check');
    expect((await fetch(`${blind.url}/readyz`)).status).toBe(200);
  });

  it('the masters of the lock quorum are checked too', async () => {
    const proc = await deployment.spawn('core', {
      REDIS_URL: durable.url,
      BUBBLE_LOCK_REDIS_URLS: [evicting.url, volatile.url, durable.url].join(','),
    });
    expect((await settingsLine(proc, durable.port)).level).toBeLessThan(WARN);
    expect((await settingsLine(proc, durable.port, 'lock quorum')).level).toBeLessThan(WARN);
    const evictingLock = await settingsLine(proc, evicting.port, 'lock quorum');
    expect(evictingLock.level).toBe(WARN);
    expect(evictingLock.msg).toContain('allkeys-lru');
    expect((await settingsLine(proc, volatile.port, 'lock quorum')).level).toBe(WARN);
  });

  it('on Redis Cluster every master is checked', async () => {
    const nodes = cluster.nodes.map((n) => `${n.host}:${n.port}`).join(',');
    const proc = await deployment.spawn('gateway', { REDIS_CLUSTER_NODES: nodes });
    for (const node of cluster.nodes) {
      const line = await settingsLine(proc, node.port);
      expect(line.level, JSON.stringify(line)).toBe(WARN);
      expect(line.msg).toContain('nothing is persisted');
    }
  });
});
