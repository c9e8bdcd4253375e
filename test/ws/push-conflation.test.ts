/**
 * The gateway's push queue: routed changes that arrive faster than frames are written are
 * conflated per user (one frame with the newest badge), versions never go down, and a poll sees
 * a change still waiting for its turn. Real memory engine, real LiveUsers, no socket needed:
 * the listener is what a socket would be handed.
 */
import { BadgeService } from '@bubble/badges';
import { LiveUsers } from '@bubble/gateway';
import { systemClock, type Badge } from '@bubble/protocol';
import { MemoryStore } from '@bubble/store';
import { waitFor } from '@bubble/test-utils';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';

describe('gateway push queue', () => {
  let live: LiveUsers | undefined;
  afterEach(async () => {
    await live?.close();
    live = undefined;
  });

  async function start() {
    const store = new MemoryStore();
    const service = new BadgeService(store, systemClock);
    const waits: number[] = [];
    live = new LiveUsers({
      gatewayId: 'g1',
      service,
      logger: pino({ level: 'silent' }),
      presenceTtlMs: 30_000,
      pollerTtlMs: () => 30_000,
      onPushed: (seconds) => waits.push(seconds),
    });
    await live.start();
    return { store, service, live, waits };
  }

  it('a burst of changes to one user reaches their socket as fewer frames, newest last, versions rising', async () => {
    const { store, service, live, waits } = await start();
    const frames: Badge[] = [];
    const texts: string[] = [];
    const first = await live.attach('u1', {
      onBadge: (held) => {
        frames.push(held.badge);
        texts.push(held.frame);
      },
    });
    // Twenty routed changes land before the gateway's next turn.
    for (let feed = 1; feed <= 20; feed++) {
      await store.fencedBadges.saveUnfenced('u1', { f: feed }, Date.now());
    }
    await waitFor(() => frames.at(-1)?.feed === 20, { message: 'the newest badge was pushed' });
    // Without conflation: the first badge and 20 frames.
    expect(frames.length).toBeLessThanOrEqual(11);
    // The first frame is the badge as of attaching; each later one is newer.
    const versions = frames.map((badge) => badge.version);
    expect(versions[0]).toBe(first.version);
    for (let i = 1; i < versions.length; i++) expect(versions[i]).toBeGreaterThan(versions[i - 1]!);
    expect(frames.at(-1)!.version).toBe(first.version + 20);
    // The last frame, written straight from the stored counts, is the stored state's badge.
    const [stored] = await store.fencedBadges.storedStates(['u1']);
    expect(JSON.parse(texts.at(-1)!)).toEqual({ type: 'badge', badge: service.badgeOf(stored!) });
    // What the metrics are made of: each routed change (the 20, and the attach's own write)
    // was either pushed or superseded by a newer one, one wait observed per push, nothing left.
    const stats = live.pushStats();
    expect(stats.routed).toBeGreaterThanOrEqual(20);
    expect(stats.pushed + stats.superseded).toBe(stats.routed);
    expect(stats.pushed).toBeGreaterThanOrEqual(frames.length - 1);
    expect(stats.superseded).toBeGreaterThanOrEqual(20 - (frames.length - 1));
    expect(stats.backlog).toBe(0);
    expect(waits.length).toBe(stats.pushed);
    for (const wait of waits) expect(wait).toBeGreaterThanOrEqual(0);
  });

  it('every held user gets the newest badge when many change at once', async () => {
    const { store, live } = await start();
    const users = Array.from({ length: 2_000 }, (_, i) => `u${i}`);
    const last = new Map<string, Badge>();
    await Promise.all(
      users.map((user) => live.attach(user, { onBadge: (held) => last.set(user, held.badge) })),
    );
    for (let round = 1; round <= 3; round++) {
      await Promise.all(
        users.map((user) => store.fencedBadges.saveUnfenced(user, { f: round }, Date.now())),
      );
    }
    await waitFor(() => users.every((user) => last.get(user)?.feed === 3), {
      message: 'every user got the newest badge',
    });
  });

  it('a poll answers with a change still waiting for its turn', async () => {
    const { store, live } = await start();
    await live.attach('u1', { onBadge: () => {} });
    const polled = await live.poll('u1', 5);
    expect(polled.fromCache).toBe(true);
    await store.fencedBadges.saveUnfenced('u1', { f: 7 }, Date.now());
    // The change is routed (a microtask) but its push waits for the next turn of the loop.
    await Promise.resolve();
    const next = await live.poll('u1', 5);
    expect(next.badge.feed).toBe(7);
    expect(next.badge.version).toBeGreaterThan(polled.badge.version);
  });
});
