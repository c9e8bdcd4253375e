/**
 * BadgeService.badges(users), offline delivery's batched cold start, answers exactly what
 * badge(user) answers for each user: random follows and posts, notices (published, withdrawn,
 * users seen at different cursors), red dots marked and clicked, conversations with members,
 * messages, reads and mutes, on both engines and a Redis Cluster. The batch goes first, so a count it got wrong
 * also shows as a version that moves when badge(user) saves the right one; repeated users and
 * users with no state at all are in every batch.
 */
import type { BadgeService } from '@bubble/badges';
import { HOUR_MS } from '@bubble/protocol';
import { RedisStore, type BubbleStore } from '@bubble/store';
import { uniquePrefix } from '@bubble/test-utils';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { useRedisCluster } from '../support/redis-cluster.js';
import { describeEachEngine, manualService, type EngineName } from '../support/engines.js';

const USERS = Array.from({ length: 12 }, (_, i) => `u${i}`);
const AUTHORS = ['a1', 'a2', 'a3'];
const CONVERSATIONS = ['c1', 'c2', 'c3', 'c4'];
const REDDOTS = ['r1', 'r2', 'r3'];
const RUNS: Record<EngineName, number> = { memory: 60, redis: 20 };

type Op =
  | { op: 'follow'; user: number; author: number }
  | { op: 'post'; author: number; ageMin: number }
  | { op: 'publish'; id: number }
  | { op: 'withdraw'; id: number }
  | { op: 'see'; user: number }
  | { op: 'mark'; name: number }
  | { op: 'click'; user: number; name: number }
  | { op: 'join'; conversation: number; users: number[] }
  | { op: 'message'; conversation: number; from: number }
  | { op: 'read'; conversation: number; user: number }
  | { op: 'mute'; conversation: number; user: number; muted: boolean }
  | { op: 'tick' };

const user = fc.nat({ max: USERS.length - 1 });
const conversation = fc.nat({ max: CONVERSATIONS.length - 1 });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constant('follow' as const), user, author: fc.nat({ max: 2 }) }),
  fc.record({ op: fc.constant('post' as const), author: fc.nat({ max: 2 }), ageMin: fc.nat(90) }),
  fc.record({ op: fc.constant('publish' as const), id: fc.integer({ min: 1, max: 6 }) }),
  fc.record({ op: fc.constant('withdraw' as const), id: fc.integer({ min: 1, max: 6 }) }),
  fc.record({ op: fc.constant('see' as const), user }),
  fc.record({ op: fc.constant('mark' as const), name: fc.nat({ max: 2 }) }),
  fc.record({ op: fc.constant('click' as const), user, name: fc.nat({ max: 2 }) }),
  fc.record({
    op: fc.constant('join' as const),
    conversation,
    users: fc.uniqueArray(user, { minLength: 1, maxLength: 6 }),
  }),
  fc.record({ op: fc.constant('message' as const), conversation, from: user }),
  fc.record({ op: fc.constant('read' as const), conversation, user }),
  fc.record({ op: fc.constant('mute' as const), conversation, user, muted: fc.boolean() }),
  fc.constant({ op: 'tick' as const }),
);

async function apply(service: BadgeService, o: Op, advance: (ms: number) => void): Promise<void> {
  const now = service.clock.now();
  switch (o.op) {
    case 'follow':
      return service.follow(USERS[o.user]!, AUTHORS[o.author]!);
    case 'post':
      await service.ingestPosts([
        { author: AUTHORS[o.author]!, id: `p${now}-${o.ageMin}`, ts: now - o.ageMin * 60_000 },
      ]);
      return;
    case 'publish':
      return service.publishNotice(o.id);
    case 'withdraw':
      return service.withdrawNotice(o.id);
    case 'see':
      await service.badge(USERS[o.user]!, { seen: true });
      return;
    case 'mark':
      return service.markReddot(REDDOTS[o.name]!);
    case 'click':
      await service.read(USERS[o.user]!, { scope: 'reddot', name: REDDOTS[o.name]! });
      return;
    case 'join':
      return service.addMembers(
        CONVERSATIONS[o.conversation]!,
        o.users.map((i) => USERS[i]!),
      );
    case 'message': {
      // Seqs from the clock: each message is newer than the ones before.
      const id = CONVERSATIONS[o.conversation]!;
      await service.ingestMessages(id, [{ seq: now, from: USERS[o.from]! }]).catch(notFound);
      return;
    }
    case 'read':
      await service
        .read(USERS[o.user]!, { scope: 'conversation', id: CONVERSATIONS[o.conversation]! })
        .catch(notFound);
      return;
    case 'mute':
      await service
        .setMuted(USERS[o.user]!, CONVERSATIONS[o.conversation]!, o.muted)
        .catch(notFound);
      return;
    case 'tick':
      advance(HOUR_MS / 4);
  }
}

/** A conversation never joined, or a user not its member: refused, and nothing changes. */
function notFound(err: unknown): void {
  const code = err instanceof Error && 'code' in err ? err.code : undefined;
  if (code !== 'UB_ERR_NOT_FOUND' && code !== 'UB_ERR_FORBIDDEN') throw err;
}

/** The property on stores `makeStore` gives, one per run. */
async function holds(makeStore: () => BubbleStore, numRuns: number): Promise<void> {
  await fc.assert(
    fc.asyncProperty(
      fc.array(opArb, { minLength: 1, maxLength: 60 }),
      fc.array(fc.nat({ max: USERS.length }), { minLength: 1, maxLength: 20 }),
      async (ops, picks) => {
        const { service, clock } = manualService(makeStore());
        let step = 0;
        for (const o of ops) {
          // Distinct timestamps: message seqs and post ids come from the clock.
          clock.advance(1_000);
          await apply(service, o, (ms) => clock.advance(ms));
          // Half-way, a batch and the single badges once more (versions move between).
          if (++step === Math.ceil(ops.length / 2)) await compare(service, picks);
        }
        await compare(service, picks);
      },
    ),
    { numRuns },
  );
}

describeEachEngine('batched cold start', (ctx, engine) => {
  it('badges(users) equals badge(user) of each user, saves included', async () => {
    await holds(() => ctx().freshStore(), RUNS[engine]);
  });
});

// A standalone Redis reads a batch in a call or two; a Cluster per user and per conversation.
describe('batched cold start [3-master Redis Cluster]', () => {
  const cluster = useRedisCluster();
  const stores: RedisStore[] = [];
  afterAll(async () => {
    await Promise.all(stores.map((store) => store.close()));
  });

  it('badges(users) equals badge(user) of each user, each call in its slot', async () => {
    const makeStore = () => {
      const store = new RedisStore({
        client: cluster.client,
        keyPrefix: uniquePrefix(),
        pools: 100,
      });
      stores.push(store);
      return store;
    };
    await holds(makeStore, 10);
  }, 120_000);
});

/** `picks` index USERS; one past the end is a user nobody ever wrote about. */
async function compare(service: BadgeService, picks: readonly number[]): Promise<void> {
  const users = picks.map((i) => USERS[i] ?? 'stranger');
  const batch = await service.badges(users);
  const single = [];
  for (const u of users) single.push(await service.badge(u));
  expect(batch).toEqual(single);
}
