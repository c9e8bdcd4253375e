/**
 * BubbleStore.commandsSent() against Redis' own tally: what the server counts in INFO
 * commandstats (and errorstats, for the commands it refused) over a mixed workload is what the
 * store says it sent. The server's tally also holds what this test sends (its INFO, a SCRIPT
 * FLUSH) and the commands the scripts run inside (seen on MONITOR as coming from "lua"), which
 * are taken off.
 */
import { poolOf } from '@bubble/protocol';
import { MemoryStore, RedisStore } from '@bubble/store';
import {
  startRedisServer,
  uniquePrefix,
  waitFor,
  type RedisServerHandle,
} from '@bubble/test-utils';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const POOLS = 8;

let server: RedisServerHandle;
let admin: Redis;

beforeAll(async () => {
  server = await startRedisServer();
  admin = new Redis(server.url, { maxRetriesPerRequest: 2 });
});

afterAll(async () => {
  await admin?.quit();
  await server?.stop();
});

/**
 * Every command a client sent that the server answered: those it ran (calls, the failed among
 * them), and those it refused before running them: rejected_calls, and unknown commands or
 * subcommands (ioredis' CLIENT SETINFO before Redis 7.2), which only errorstats counts. Every
 * refusal and every failure is an error reply, so refusals = errors − failures.
 */
async function serverTally(): Promise<number> {
  const info = await admin.info('commandstats', 'errorstats');
  let calls = 0;
  let failed = 0;
  let errors = 0;
  for (const [, stat] of info.matchAll(/^cmdstat_\S+?:(\S+)$/gm)) {
    const fields = Object.fromEntries(stat!.split(',').map((pair) => pair.split('=')));
    calls += Number(fields.calls);
    failed += Number(fields.failed_calls);
  }
  for (const [, count] of info.matchAll(/^errorstat_\S+?:count=(\d+)$/gm)) errors += Number(count);
  return calls + errors - failed;
}

describe('commandsSent', () => {
  it('is what Redis counts from the store over a mixed workload', async () => {
    const monitor = await admin.monitor();
    let scriptCalls = 0;
    let sentinelSeen = false;
    const sentinel = uniquePrefix('sentinel');
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      if (source === 'lua') scriptCalls++;
      if (args[0]?.toLowerCase() === 'echo' && args[1] === sentinel) sentinelSeen = true;
    });
    const before = await serverTally();

    const store = new RedisStore({
      url: server.url,
      keyPrefix: uniquePrefix('sent'),
      pools: POOLS,
    });
    const ticks: number[] = [];
    const changes: string[] = [];
    const closers: (() => Promise<void>)[] = [];
    closers.push(await store.coordination.onTick((seq) => ticks.push(seq)));
    closers.push(
      await store.fencedBadges.subscribe([0, 1, 2], (_pool, list) =>
        list.forEach(({ user }) => changes.push(user)),
      ),
    );
    closers.push(await store.fencedBadges.subscribeGateway('g1', () => {}));

    const users = Array.from({ length: 40 }, (_, i) => `u${i}`);
    await store.follows.follow('u1', 'a1', 100);
    await store.follows.replace('u2', ['a1', 'a2', 'a3']);
    await store.posts.ingest(
      [
        { author: 'a1', id: 'p1', ts: 1000 },
        { author: 'a2', id: 'p2', ts: 1001 },
        { author: 'a3', id: 'p3', ts: 1002 },
      ],
      0,
    );
    // Independent commands of one tick, auto-pipelined together.
    await Promise.all([
      store.feedInputs('u2'),
      store.posts.countBetween(['a1', 'a2', 'a3'], 0, 2000),
      store.posts.window(['a1', 'a2'], 0),
      store.cursors.advanceFeedReadAt('u2', 1001),
      ...users.map((user) => store.badges.load(user)),
    ]);
    await store.coordination.heartbeat(
      { id: 'n1', role: 'core', startedAt: 1, seenAt: 5000 },
      1000,
    );
    await store.coordination.tryLead('n1', 1000);
    const fence = await store.coordination.nextFence(0);
    await store.presence.setOnline(users.map((user) => ({ user, ttlMs: 4000 })));
    await store.fencedBadges.route('g1', users, 10_000);
    const pool0 = users.filter((user) => poolOf(user, POOLS) === 0);
    await store.fencedBadges.saveFenced(
      0,
      fence,
      pool0.map((user) => ({ user, fields: { f: 1 } })),
      5000,
    );
    await Promise.all(users.map((user) => store.badges.save(user, { f: 2, n: 1 }, 5001)));
    // The server forgets its scripts: the encoded save and a defined script each fall back.
    await admin.script('FLUSH');
    await store.badges.save('u1', { f: 3 }, 5002);
    await store.follows.follow('u3', 'a2', 100);
    await store.coordination.publishTick(1);
    await store.fencedBadges.unroute('g1', users.slice(0, 5));
    await waitFor(() => ticks.length === 1 && changes.length > 0);

    const sent = store.commandsSent();
    const after = await serverTally();
    await admin.echo(sentinel);
    await waitFor(() => sentinelSeen);
    // This test's own commands in between: its first INFO and the SCRIPT FLUSH.
    expect(after - before - 2 - scriptCalls).toBe(sent);
    expect(sent).toBeGreaterThan(50);

    await Promise.all(closers.map((close) => close()));
    await store.close();
    monitor.disconnect();
  });

  it('is 0 for the memory engine', async () => {
    const store = new MemoryStore({ pools: POOLS });
    await store.follows.follow('u1', 'a1', 10);
    await store.badges.save('u1', { f: 1 }, 1);
    expect(store.commandsSent()).toBe(0);
  });
});
