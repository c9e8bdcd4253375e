/**
 * The sources beside the feed (notices, red dots, marks, conversations), memory and Redis side
 * by side: random operation sequences through a memory store and a Redis store, with identical
 * answers required after every step.
 */
import { HOUR_MS } from '@bubble/protocol';
import { MemoryStore, type BubbleStore } from '@bubble/store';
import fc from 'fast-check';
import { expect, it } from 'vitest';
import { T0, describeEachEngine } from '../support/engines.js';
import { byConversation, change, msg, sorted } from './extras-contract-support.js';

const USERS = ['u1', 'u2', 'u3', 'u4'] as const;
const CONVERSATIONS = ['c1', 'c2'] as const;
const REDDOTS = ['r1', 'r2'] as const;

type Op =
  | { op: 'publish'; id: number }
  | { op: 'withdraw'; id: number }
  | { op: 'countAfter'; seen: number }
  | { op: 'mark'; name: string; dt: number }
  | { op: 'clear'; name: string }
  | { op: 'see'; user: string }
  | { op: 'advanceSeen'; user: string; to: number }
  | { op: 'click'; user: string; names: string[] }
  | { op: 'drop'; ago: number; limit: number }
  | { op: 'tick'; hours: number }
  | { op: 'replace'; conversation: string; members: string[] }
  | { op: 'add'; conversation: string; members: string[] }
  | { op: 'remove'; conversation: string; user: string }
  | { op: 'dissolve'; conversation: string }
  | {
      op: 'ingest';
      conversation: string;
      messages: Array<{ seq: number; from: string; p: boolean }>;
    }
  | { op: 'read'; conversation: string; user: string; seq: number | undefined }
  | { op: 'mute'; conversation: string; user: string; muted: boolean };

const user = fc.constantFrom(...USERS);
const conversation = fc.constantFrom(...CONVERSATIONS);
const seq = fc.integer({ min: 1, max: 12 });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constant('publish' as const), id: fc.integer({ min: 1, max: 8 }) }),
  fc.record({ op: fc.constant('withdraw' as const), id: fc.integer({ min: 1, max: 8 }) }),
  fc.record({ op: fc.constant('countAfter' as const), seen: fc.integer({ min: 0, max: 8 }) }),
  fc.record({ op: fc.constant('mark' as const), name: fc.constantFrom(...REDDOTS), dt: fc.nat(5) }),
  fc.record({ op: fc.constant('clear' as const), name: fc.constantFrom(...REDDOTS) }),
  fc.record({ op: fc.constant('see' as const), user }),
  fc.record({ op: fc.constant('advanceSeen' as const), user, to: fc.integer({ min: 0, max: 8 }) }),
  fc.record({
    op: fc.constant('click' as const),
    user,
    names: fc.subarray([...REDDOTS]),
  }),
  fc.record({
    op: fc.constant('drop' as const),
    ago: fc.integer({ min: 0, max: 6 }),
    limit: fc.integer({ min: 0, max: 3 }),
  }),
  fc.record({ op: fc.constant('tick' as const), hours: fc.integer({ min: 0, max: 3 }) }),
  fc.record({
    op: fc.constant('replace' as const),
    conversation,
    members: fc.subarray([...USERS]),
  }),
  fc.record({ op: fc.constant('add' as const), conversation, members: fc.subarray([...USERS]) }),
  fc.record({ op: fc.constant('remove' as const), conversation, user }),
  fc.record({ op: fc.constant('dissolve' as const), conversation }),
  fc.record({
    op: fc.constant('ingest' as const),
    conversation,
    messages: fc.array(fc.record({ seq, from: fc.constantFrom(...USERS, 'x'), p: fc.boolean() }), {
      minLength: 1,
      maxLength: 3,
    }),
  }),
  fc.record({
    op: fc.constant('read' as const),
    conversation,
    user,
    seq: fc.option(seq, { nil: undefined }),
  }),
  fc.record({ op: fc.constant('mute' as const), conversation, user, muted: fc.boolean() }),
);

/** Runs one operation; the answer in a form that does not depend on set iteration order. */
async function apply(store: BubbleStore, o: Op, now: number): Promise<unknown> {
  switch (o.op) {
    case 'publish':
      return store.notices.publish(o.id, now);
    case 'withdraw':
      return store.notices.withdraw(o.id);
    case 'countAfter':
      return [await store.notices.countAfter(o.seen), await store.notices.liveIds()];
    case 'mark':
      return store.reddots.mark(o.name, now - o.dt);
    case 'clear':
      return [await store.reddots.clear(o.name), await store.reddots.all()];
    case 'see':
      return [
        await store.marks.see(o.user, now, () => store.notices.highestId()),
        await store.marks.state(o.user),
      ];
    case 'advanceSeen':
      return [await store.marks.advanceSeen(o.user, o.to), await store.marks.state(o.user)];
    case 'click':
      await store.marks.click(o.user, o.names, now);
      return store.marks.state(o.user);
    case 'drop':
      return store.marks.dropInactive(now - o.ago * HOUR_MS, o.limit, now);
    case 'tick':
      return null;
    case 'replace':
      return change(await store.conversations.replaceMembers(o.conversation, o.members));
    case 'add':
      return change(await store.conversations.addMembers(o.conversation, o.members));
    case 'remove':
      return store.conversations.removeMember(o.conversation, o.user);
    case 'dissolve':
      return sorted(await store.conversations.dissolve(o.conversation));
    case 'ingest':
      return store.conversations.ingest(
        o.conversation,
        o.messages.map((m) =>
          msg(m.seq, m.from, now + m.seq, m.p ? { s: m.seq, at: now } : undefined),
        ),
      );
    case 'read':
      return store.conversations.read(o.conversation, o.user, o.seq);
    case 'mute':
      return store.conversations.setMuted(o.conversation, o.user, o.muted);
  }
}

/** Everything observable, after every step. */
async function snapshot(store: BubbleStore): Promise<unknown> {
  const out: Record<string, unknown> = {
    highest: await store.notices.highestId(),
    live: await store.notices.liveIds(),
    countAfter: await Promise.all(
      Array.from({ length: 10 }, (_, seen) => store.notices.countAfter(seen)),
    ),
    reddots: await store.reddots.all(),
  };
  for (const u of USERS) {
    out[`marks ${u}`] = await store.marks.state(u);
    out[`in ${u}`] = byConversation(await store.conversations.memberships(u));
  }
  out.seqs = (await store.conversations.membershipSeqs([...USERS, ...USERS])).map(byConversation);
  for (const c of CONVERSATIONS) {
    const members = await store.conversations.members(c);
    out[`members ${c}`] = members && sorted(members);
  }
  return out;
}

describeEachEngine(
  'extras: memory and Redis answer alike',
  (ctx) => {
    it('random operation sequences give identical answers and state on both engines', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(opArb, { minLength: 1, maxLength: 40, size: 'medium' }),
          async (ops) => {
            const redis = ctx().freshStore();
            const memory = new MemoryStore({ pools: redis.pools });
            let now = T0;
            for (const [i, o] of ops.entries()) {
              if (o.op === 'tick') now += o.hours * HOUR_MS;
              const [fromMemory, fromRedis] = [
                await apply(memory, o, now),
                await apply(redis, o, now),
              ];
              expect(fromRedis, `answer of step ${i} ${JSON.stringify(o)}`).toEqual(fromMemory);
            }
            expect(await snapshot(redis)).toEqual(await snapshot(memory));
          },
        ),
        { numRuns: 40 },
      );
    });
  },
  ['redis'],
);
