import { expect, test } from 'vitest';
import { Redis, Cluster } from 'ioredis';
import { startRedisServer, startRedisCluster, freePort } from '@bubble/test-utils';
import { existsSync } from 'node:fs';
test('server', async () => {
  const t0 = Date.now();
  const s = await startRedisServer();
  console.log('server start ms', Date.now() - t0, s.url, s.pid);
  const c = new Redis(s.url);
  await c.set('k', 'v');
  expect(await c.get('k')).toBe('v');
  expect(await c.config('GET', 'save')).toEqual(['save', '']);
  c.disconnect();
  await s.stop();
  await s.stop();
  expect(() => process.kill(s.pid, 0)).toThrow();
});
test('kill then stop', async () => {
  const s = await startRedisServer({ args: ['--maxmemory', '10mb'] });
  s.kill();
  await s.stop();
});
test('early exit', async () => {
  await expect(startRedisServer({ args: ['--bogus-option', 'x'] })).rejects.toThrow(/exited early[\s\S]*bogus/i);
});
test('port taken', async () => {
  const s = await startRedisServer();
  await expect(startRedisServer({ port: s.port })).rejects.toThrow(/exited early|Address already/i);
  await s.stop();
});
test('cluster', async () => {
  const t0 = Date.now();
  const cl = await startRedisCluster();
  console.log('cluster start ms', Date.now() - t0, cl.nodes);
  const c = new Cluster(cl.nodes);
  for (let i = 0; i < 50; i++) await c.set(`key${i}`, String(i));
  expect(await c.get('key7')).toBe('7');
  await c.quit();
  await cl.stop();
});
test('leak', async () => {
  const s = await startRedisServer();
  console.log('LEAKPID', s.pid, (await freePort()));
});
