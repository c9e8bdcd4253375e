/**
 * The Redis CPU per entry of the ingest stream's mechanism alone, with no effect applied: the
 * platform's `XADD` of one post per entry (pipelined, as `bench ingest-stream`'s producer), then
 * `XREADGROUP COUNT 1000` and one `XACK` per read, as cheap as a consumer can read (no packing).
 * It is what any stream consumer adds to a post's own work, so it bounds `streamRatio` on a
 * machine where Redis is the bottleneck (docs/benchmarks.md, ingest-stream). Use an empty,
 * otherwise idle redis-server: the figures are its `used_cpu_user + used_cpu_sys`.
 *
 *   npx tsx packages/bench/scripts/stream-floor.ts <redis-url> [entries=200000]
 */
import { Redis } from 'ioredis';

const [url = 'redis://127.0.0.1:6379', entriesArg = '200000'] = process.argv.slice(2);
const entries = Number(entriesArg);
const redis = new Redis(url);
const key = `floor${Date.now()}:ingest:{0}`;

async function redisCpuSeconds(): Promise<number> {
  const info = await redis.info('cpu');
  const field = (name: string) => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)![1]);
  return field('used_cpu_user') + field('used_cpu_sys');
}

await redis.xgroup('CREATE', key, 'bubble', '0', 'MKSTREAM');
let before = await redisCpuSeconds();
for (let i = 0; i < entries; i += 1000) {
  const pipeline = redis.pipeline();
  for (let k = i; k < Math.min(entries, i + 1000); k++) {
    const body = JSON.stringify({ author: `a${k % 5000}`, id: `p${k}`, ts: 1_796_000_000_000 + k });
    pipeline.xadd(key, '*', 'v', '1', 'op', 'post', 'body', body);
  }
  await pipeline.exec();
}
const appendUs = ((await redisCpuSeconds()) - before) * (1e6 / entries);

before = await redisCpuSeconds();
let read = 0;
for (;;) {
  const reply = (await redis.xreadgroup(
    'GROUP',
    'bubble',
    'floor',
    'COUNT',
    1000,
    'STREAMS',
    key,
    '>',
  )) as [string, [string, string[]][]][] | null;
  const batch = reply?.[0]?.[1] ?? [];
  if (batch.length === 0) break;
  await redis.xack(key, 'bubble', ...batch.map(([id]) => id));
  read += batch.length;
}
const readAckUs = ((await redisCpuSeconds()) - before) * (1e6 / read);
await redis.del(key);
redis.disconnect();
console.log(
  JSON.stringify({
    entries,
    read,
    redisUsPerEntry: {
      append: Math.round(appendUs * 100) / 100,
      readAndAck: Math.round(readAckUs * 100) / 100,
      total: Math.round((appendUs + readAckUs) * 100) / 100,
    },
  }),
);
