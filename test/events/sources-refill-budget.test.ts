/**
 * The core's background refill (packages/core/src/sources-refill.ts) against a real endpoint
 * and client, on the memory engine: a sweep is handed at most `followsPerSweep` follows of
 * installed users, the longest waiting first, and the users a sweep was handed but did not
 * load (its load failed: nothing settled them) are handed to the next sweep again.
 */
import { SourcesClient } from '@bubble/events';
import { MemoryStore } from '@bubble/store';
import { startSourcesEndpoint, waitFor, type SourcesEndpoint } from '@bubble/test-utils';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { SourcesRefill } from '../../packages/core/src/sources-refill.js';

const SECRET = 'refill-test-secret-0c6a1d9e5b2f4a7c8e3d';
const CAPS = { follows: 50, topics: 20 };

const opened: { close(): unknown }[] = [];
afterEach(async () => {
  for (const thing of opened.splice(0).reverse()) await thing.close();
});

async function rig(users: string[], followsEach: number) {
  const graph = new Map(
    users.map((user) => [
      user,
      { follows: Array.from({ length: followsEach }, (_, i) => `${user}.a${i}`), topics: [] },
    ]),
  );
  const endpoint: SourcesEndpoint = await startSourcesEndpoint({ secret: SECRET, graph });
  opened.push(endpoint);
  const client = new SourcesClient({ url: endpoint.url, secret: SECRET, caps: CAPS });
  opened.push(client);
  const store = new MemoryStore({ pools: 4, sourcesOnDemand: true });
  const refill = new SourcesRefill({
    store,
    fetcher: client,
    caps: CAPS,
    timeoutMs: 2000,
    holds: (user) => !letGo.has(user),
    log: pino({ level: 'silent' }),
    followsPerSweep: 3 * followsEach,
  });
  opened.push(refill);
  const letGo = new Set<string>();
  for (const user of users) refill.need(user);
  await waitFor(() => refill.installedCount === users.length, {
    message: 'every user installed',
  });
  const take = () => refill.takeInstalled().map(({ user }) => user);
  return { store, refill, letGo, take };
}

describe('sources refill: what a sweep is handed', () => {
  it('hands each sweep at most its budget of follows, the longest waiting first', async () => {
    const users = Array.from({ length: 8 }, (_, i) => `r${i}`);
    const { store, refill, take } = await rig(users, 10);
    expect(await store.sources.held(users)).toEqual(users.map(() => true));
    const handed: string[][] = [];
    for (let sweep = 0; sweep < 4; sweep++) {
      const batch = take();
      for (const user of batch) refill.settled(user);
      handed.push(batch);
    }
    expect(handed.map((batch) => batch.length)).toEqual([3, 3, 2, 0]);
    expect(handed.flat().sort()).toEqual([...users].sort());
  });

  it("hands the sweep what the install left, the platform's follows and cursor", async () => {
    const users = ['h0', 'h1'];
    const { refill } = await rig(users, 4);
    const handed = refill.takeInstalled();
    expect(handed.map(({ user }) => user)).toEqual(users);
    for (const { user, inputs } of handed) {
      expect(inputs).toEqual({
        follows: Array.from({ length: 4 }, (_, i) => `${user}.a${i}`),
        topics: [],
        readAt: null,
        held: true,
        answeredNoticesSeen: false,
      });
    }
  });

  it('hands the users of a sweep whose load failed to the next sweep again', async () => {
    const users = Array.from({ length: 6 }, (_, i) => `f${i}`);
    const { refill, letGo, take } = await rig(users, 10);
    const first = take();
    expect(first).toHaveLength(3);
    // The sweep's load failed: none of them was settled.
    expect(take()).toEqual(first);
    // Loaded now, but one of them was let go meanwhile.
    letGo.add(first[2]!);
    refill.settled(first[0]!);
    const third = take();
    expect(third[0]).toBe(first[1]);
    expect(third).not.toContain(first[0]);
    expect(third).not.toContain(first[2]);
    for (const user of third) refill.settled(user);
    expect(take()).toEqual(users.filter((u) => !first.includes(u) && !third.includes(u)));
  });
});
