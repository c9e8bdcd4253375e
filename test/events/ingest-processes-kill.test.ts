/**
 * The ingest stream with real processes: `bubble gateway` and `bubble all` consuming
 * `<prefix>:ingest:{i}` of a real redis-server, a gateway killed with -9 while it holds entries
 * it read but had not stored, poison entries, `bubble dead list|replay|drop`, and the backlog on
 * /metrics, GET /v1/cluster and `bubble status`. Runs the built CLI, so the workspace is built
 * first.
 */
import { mulberry32 } from '@bubble/protocol';
import { RedisKeys } from '@bubble/store';
import { uniquePrefix, waitFor } from '@bubble/test-utils';
import { describe, expect, it } from 'vitest';
import { HoldingProxy } from '../cluster/holding-proxy.js';
import {
  Model,
  append,
  direct,
  drained,
  entryNamingPending,
  expectEffects,
  metric,
  metricsOf,
  platform,
  proxies,
  randomOps,
  rig,
  settings,
  someDeadErrors,
  spawnRole,
  states,
  useIngestProcesses,
  withDeadline,
} from './ingest-processes-support.js';

useIngestProcesses();

describe('the ingest stream with real processes', () => {
  it('kill -9 of a gateway holding entries it read but did not store: another claims and applies them; XADDed = acknowledged + pending + dead', async () => {
    const prefix = uniquePrefix('ingest-kill');
    const keys = new RedisKeys(prefix, 100);
    const rand = mulberry32(17);
    const model = new Model();
    const serial = { next: 0 };
    const users = Array.from({ length: 40 }, (_, i) => `u${i}`);
    const authors = Array.from({ length: 20 }, (_, i) => `a${i}`);

    // Gateway A's Redis connections pass a proxy that can hold one of them mid-flight.
    const proxy = await HoldingProxy.start(rig.redis.port);
    proxies.push(proxy);
    const a = await spawnRole('gateway', settings(prefix, proxy.url), 'gateway A');

    const aNode = (
      (await platform(a.url, 'GET', '/v1/cluster')) as {
        nodes: Array<{ id: string; role: string }>;
      }
    ).nodes.find((node) => node.role === 'gateway')?.id;
    expect(aNode).toBeDefined();

    // First batch: A reads, stores and acknowledges all of it.
    const first = randomOps(model, rand, 1_000, users, authors, serial);
    const firstCounts = await append(keys, first);
    await drained(keys, firstCounts, a, 20_000);

    // Second batch, led by a post of an author no other entry names: A's write of its effect
    // is held in the proxy (with everything after it on that connection), never reaching Redis.
    const held = proxy.arm(/a-held/);
    const marker = [
      model.follow('u0', 'a-held'),
      model.post('a-held', ['h1', 'h2', 'h3'], Date.now() - 30_000),
    ];
    const second = [...marker, ...randomOps(model, rand, 2_000, users, authors, serial)];
    const secondCounts = await append(keys, second);
    const total = firstCounts.map((n, p) => n + secondCounts[p]!);
    await withDeadline(held, 20_000, () => `gateway A never wrote the held post\n${a.describe()}`);
    await waitFor(async () => (await states(keys)).some((s) => s.pending > 0), {
      timeoutMs: 5_000,
      message: 'nothing pending while gateway A is held',
    });
    await a.kill();

    // After the kill the held entry is still pending, owned by A's consumer alone. (A
    // may have acknowledged entries it had stored between the sample above and the kill, on a
    // connection the proxy did not hold, so the count pending can only be bounded from below.)
    const afterKill = await states(keys);
    const pendingAtKill = afterKill.reduce((sum, s) => sum + s.pending, 0);
    expect(await entryNamingPending(keys, 'a-held')).toBe(true);
    expect(pendingAtKill).toBeGreaterThan(0);
    const owners = new Set(afterKill.flatMap((s) => [...s.consumers.keys()]));
    expect([...owners]).toEqual([aNode]);
    const acknowledged = afterKill.reduce((sum, s) => sum + s.read - s.pending, 0);
    expect(acknowledged).toBeGreaterThanOrEqual(first.length);
    // A stored nothing of the held entries.
    expect(await direct.exists(keys.posts('a-held'))).toBe(0);

    // Gateway B (a whole `bubble all`) claims A's entries after the claim time and applies them.
    const b = await spawnRole('all', settings(prefix), 'all B');
    await drained(keys, total, b, 30_000);

    const end = await states(keys);
    const appended = total.reduce((sum, n) => sum + n, 0);
    const read = end.reduce((sum, s) => sum + s.read, 0);
    const pending = end.reduce((sum, s) => sum + s.pending, 0);
    const dead = end.reduce((sum, s) => sum + s.dead, 0);
    expect(appended).toBe(first.length + second.length);
    // Every entry was delivered (read), none is pending or dead: all were acknowledged.
    expect({
      appended,
      acknowledged: read - pending - dead,
      pending,
      dead,
      deadErrors: await someDeadErrors(keys),
    }).toEqual({ appended, acknowledged: appended, pending: 0, dead: 0, deadErrors: [] });
    const claimed = metric(await metricsOf(b), 'bubble_ingest_claimed_total');
    expect(claimed).toBeGreaterThanOrEqual(pendingAtKill);

    await expectEffects(b.url, model, users);
    expect(model.feed('u0', Date.now())).toBeGreaterThanOrEqual(3);
  }, 60_000);
});
