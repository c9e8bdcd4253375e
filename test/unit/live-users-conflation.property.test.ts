/**
 * LiveUsers compares each routed change with the newest state it knows as numbers where it can
 * (epoch codes) and as text where it cannot. Against the definition: for any order of
 * routed changes, in messages of a pool or in lists, with epochs newEpoch makes and others, a
 * user's frames never go back (isNewerBadge between each two) and the last one is the newest of
 * everything routed (the fold of isNewerBadge). As in the store, a state is its stamp, and an
 * epoch that gave way to another never comes back. A real LiveUsers and BadgeService; the link to
 * the store is a hand-made one that hands the test's messages over as the store's readers do.
 */
import { BadgeService, type GatewayLink } from '@bubble/badges';
import { LiveUsers } from '@bubble/gateway';
import {
  ChangeList,
  PublishedChanges,
  isNewerBadge,
  poolOf,
  systemClock,
  type Badge,
  type BadgeChangeReader,
} from '@bubble/protocol';
import { MemoryStore } from '@bubble/store';
import fc from 'fast-check';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';

const POOLS = 4;
const USERS = ['u1', 'u2', 'u3', 'u4', 'u5', 'u6'];
/** A user's epochs in the order they come: an epoch replaced never comes back. */
const EPOCHS = ['AAAAAAAA', 'k3fA9zQx', 'ep', 'k3fA9zQ', 'BBBBBBBB'];

interface Routed {
  user: string;
  epoch: string;
  version: number;
  feed: number;
}

/** A change as drawn: its user, whether their state started over first, its version. */
const drawn = fc.record({
  user: fc.constantFrom(...USERS),
  startsOver: fc.nat({ max: 6 }).map((n) => n === 0),
  version: fc.nat({ max: 6 }),
});
const step = fc.oneof(
  fc.record({ kind: fc.constant('message' as const), changes: fc.array(drawn, { maxLength: 8 }) }),
  fc.record({ kind: fc.constant('list' as const), changes: fc.array(drawn, { maxLength: 8 }) }),
  fc.record({ kind: fc.constant('turn' as const) }),
);

const turn = () => new Promise((resolve) => setImmediate(resolve));

type Drawn = { user: string; startsOver: boolean; version: number };
type Step = { kind: 'turn' } | { kind: 'message' | 'list'; changes: Drawn[] };

async function run(steps: readonly Step[]): Promise<void> {
  const service = new BadgeService(new MemoryStore(), systemClock);
  let deliver: ((changes: BadgeChangeReader) => void) | undefined;
  const link: GatewayLink = {
    pools: POOLS,
    subscribe: async (_gateway, onChanges) => {
      deliver = onChanges;
      return async () => {};
    },
    subscribeLists: async () => async () => {},
    storedStates: async () => [],
    hold: async () => {},
    release: async () => {},
    ping: async () => {},
  };
  const start: Badge = await service.badge('u0');
  const live = new LiveUsers({
    gatewayId: 'g1',
    service: {
      serveBadge: async (user) => ({
        badge: { ...start, user, epoch: EPOCHS[0]!, version: 0, feed: 0 },
        stale: false,
      }),
      badgeOf: (state) => service.badgeOf(state),
      frameOf: (...args) => service.frameOf(...args),
      gatewayLink: link,
    },
    logger: pino({ level: 'silent' }),
    presenceTtlMs: 60_000,
    pollerTtlMs: () => 60_000,
  });
  await live.start();
  const frames = new Map<string, Badge[]>();
  const newest = new Map<string, Routed>();
  for (const user of USERS) {
    frames.set(user, []);
    newest.set(user, { user, epoch: EPOCHS[0]!, version: 0, feed: 0 });
    // Every badge handed to the listener, the first one (attach's) included.
    await live.attach(user, {
      onBadge: (held) => frames.get(user)!.push((JSON.parse(held.frame) as { badge: Badge }).badge),
    });
  }
  const line = (c: Routed) => `${c.user}\n${c.epoch}|${c.version}|7|f=${c.feed}`;
  // Versions of an epoch come in any order, repeated or not; a state is its stamp, so its
  // counts follow from epoch and version.
  const epochOf = new Map(USERS.map((user) => [user, 0]));
  const stateOf = ({ user, startsOver, version }: Drawn): Routed => {
    const at = Math.min(EPOCHS.length - 1, epochOf.get(user)! + (startsOver ? 1 : 0));
    epochOf.set(user, at);
    return { user, epoch: EPOCHS[at]!, version, feed: at * 10 + version };
  };
  for (const s of steps) {
    if (s.kind === 'turn') {
      await turn();
      continue;
    }
    const changes = s.changes.map(stateOf);
    for (const c of changes) {
      if (isNewerBadge(c, newest.get(c.user))) newest.set(c.user, c);
    }
    if (s.kind === 'list') {
      deliver!(
        new ChangeList(changes.map((c) => ({ ...c, computedAt: 7, fields: { f: c.feed } }))),
      );
      continue;
    }
    // A message per pool, as the store publishes them.
    for (let pool = 0; pool < POOLS; pool++) {
      const ofPool = changes.filter((c) => poolOf(c.user, POOLS) === pool);
      if (ofPool.length > 0)
        deliver!(new PublishedChanges(['- 1', ...ofPool.map(line)].join('\n')));
    }
  }
  for (let i = 0; i < 4; i++) await turn();
  for (const user of USERS) {
    const seen = frames.get(user)!;
    for (let i = 1; i < seen.length; i++) expect(isNewerBadge(seen[i]!, seen[i - 1])).toBe(true);
    const last = seen.at(-1)!;
    const want = newest.get(user)!;
    expect({ epoch: last.epoch, version: last.version, feed: last.feed }).toEqual({
      epoch: want.epoch,
      version: want.version,
      feed: want.feed,
    });
  }
  await live.close();
}

describe('LiveUsers conflation against isNewerBadge', () => {
  it('frames never go back and the last is the newest routed, whatever the order', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 12 }), (steps) => run(steps)),
      { numRuns: 150 },
    );
  });
});
