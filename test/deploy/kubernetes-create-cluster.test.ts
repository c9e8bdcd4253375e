// deploy/kubernetes/overlays/redis-cluster/create-cluster.sh against three real cluster-enabled
// redis-servers.
import path from 'node:path';
import { startRedisServer, type RedisServerHandle } from '@bubble/test-utils';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from '../support/build.js';
import { run } from './kubernetes-support.js';

describe('deploy/kubernetes/overlays/redis-cluster/create-cluster.sh', () => {
  const servers: RedisServerHandle[] = [];
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
  });

  it('joins three cluster-enabled nodes into one cluster, and leaves a formed cluster alone', async () => {
    servers.push(...(await Promise.all([0, 1, 2].map(() => startRedisServer({ cluster: true })))));
    const script = path.join(ROOT, 'deploy/kubernetes/overlays/redis-cluster/create-cluster.sh');
    const env = {
      PATH: process.env.PATH,
      REDIS_NODES: servers.map((s) => `127.0.0.1:${s.port}`).join(' '),
      CREATE_DEADLINE_S: '30',
    };
    const first = await run('sh', [script], { env, timeout: 60_000 });
    expect(first.stdout).toContain('cluster created');
    for (const server of servers) {
      const client = new Redis(server.url);
      try {
        const info = (await client.call('CLUSTER', 'INFO')) as string;
        expect(info).toContain('cluster_state:ok');
        expect(info).toContain('cluster_known_nodes:3');
      } finally {
        client.disconnect();
      }
    }
    const again = await run('sh', [script], { env, timeout: 60_000 });
    expect(again.stdout).toContain('nothing to do');
  });
});
