/**
 * The polling fallback stays cheap (issue 4): a poll whose If-None-Match matches the badge the
 * gateway holds for a user with a socket is answered 304 without a single Redis command. MONITOR
 * on its own connection sees every command the server runs between two ECHO markers.
 */
import type { RedisStore } from '@bubble/store';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { call, tokenFor, useEngine, type LiveApp } from './support.js';
import { connect, ids } from './live-client.js';

/** The commands Redis ran while `work` ran (markers excluded). */
async function commandsDuring(app: LiveApp, work: () => Promise<void>): Promise<string[]> {
  // A standalone server in these tests, never a Cluster.
  const client = (app.store as RedisStore).redis as unknown as Redis;
  const monitor = await client.monitor();
  const id = Math.random().toString(36).slice(2);
  const seen: string[] = [];
  let done: () => void = () => {};
  const finished = new Promise<void>((resolve) => (done = resolve));
  monitor.on('monitor', (_time: string, args: string[]) => {
    seen.push(args.map(String).join(' '));
    if (String(args[0]).toLowerCase() === 'echo' && args[1] === `end-${id}`) done();
  });
  await client.echo(`start-${id}`);
  await work();
  await client.echo(`end-${id}`);
  await finished;
  monitor.disconnect();
  const from = seen.findIndex((c) => c.endsWith(`start-${id}`));
  return seen.slice(from + 1, -1);
}

describe('poll cost [redis]', () => {
  // No core, no scheduler, presence renewed every 40 s, no check for lost pub/sub messages:
  // nothing else talks to Redis meanwhile.
  const rig = useEngine('redis');

  it('a 304 for a user the gateway holds sends Redis nothing; a cold poll does', async () => {
    const app = await rig.start({ core: false, presenceTtlMs: 120_000, pubsubCheckMs: 0 });
    const [held, cold] = ids('pc', 2) as [string, string];
    await connect(app, held);
    const token = await tokenFor(held);
    const poll = (user: string, bearer: string, etag?: string) =>
      call(app, 'GET', '/v1/badge', {
        headers: {
          authorization: `Bearer ${bearer}`,
          ...(etag ? { 'if-none-match': etag } : {}),
        },
      });
    const first = await poll(held, token);
    const etag = first.headers.get('etag')!;

    const during304 = await commandsDuring(app, async () => {
      for (let i = 0; i < 20; i++) expect((await poll(held, token, etag)).status).toBe(304);
    });
    expect(during304).toEqual([]);

    // The control: the markers see a cold start's reads.
    const coldToken = await tokenFor(cold);
    const duringCold = await commandsDuring(app, async () => {
      expect((await poll(cold, coldToken)).status).toBe(200);
    });
    expect(duringCold.length).toBeGreaterThan(0);
  });
});
