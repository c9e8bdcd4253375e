/**
 * The conversation list against its brute-force definition (docs/semantics.md, Conversations):
 * a user's conversations ordered by the ts of the highest seq, then the higher seq, then the id,
 * the `limit` most recent. Random joins, replaces, leaves, messages (repeated seqs included),
 * reads, mutes and dissolutions, with BUBBLE_LARGE_GROUP at 3 so groups cross it both ways, and
 * a Redis activity index of 3 entries so trims and rebuilds happen; on the memory engine, one
 * redis-server and a 3-master Redis Cluster. The 100 cap with the default sizes is checked too.
 */
import { BadgeService } from '@bubble/badges';
import { ManualClock } from '@bubble/protocol';
import { MemoryStore, RedisStore, type BubbleStore, type Membership } from '@bubble/store';
import { startRedisServer, uniquePrefix, type RedisServerHandle } from '@bubble/test-utils';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useRedisCluster } from '../support/redis-cluster.js';

const USERS = ['u0', 'u1', 'u2', 'u3'];
const LARGE_GROUP = 3;
const INDEX_SIZE = 3;
const CONVERSATIONS = ['c0', 'c1', 'c2', 'c3', 'c4', 'c5', 'c6', 'c7', 'c8'];

type Op =
  | { op: 'replace'; c: string; members: string[] }
  | { op: 'add'; c: string; members: string[] }
  | { op: 'remove'; c: string; user: string }
  | { op: 'dissolve'; c: string }
  | { op: 'message'; c: string; from: string; step: number; ts: number }
  | { op: 'read'; c: string; user: string; seq: number | undefined }
  | { op: 'mute'; c: string; user: string; muted: boolean };

const user = fc.constantFrom(...USERS);
const conversation = fc.constantFrom(...CONVERSATIONS);
// Mostly small groups (so users gather more conversations than the index holds), some large.
const members = fc.oneof(
  { weight: 4, arbitrary: fc.uniqueArray(user, { maxLength: LARGE_GROUP }) },
  {
    weight: 1,
    arbitrary: fc.uniqueArray(user, { minLength: LARGE_GROUP + 1, maxLength: USERS.length }),
  },
);
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({ op: fc.constant('replace' as const), c: conversation, members }),
  },
  {
    weight: 3,
    arbitrary: fc.record({ op: fc.constant('add' as const), c: conversation, members }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ op: fc.constant('remove' as const), c: conversation, user }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('dissolve' as const), c: conversation }) },
  {
    weight: 6,
    arbitrary: fc.record({
      op: fc.constant('message' as const),
      c: conversation,
      from: user,
      // -1: a seq already ingested again; ts from a few values, so ties happen.
      step: fc.integer({ min: -1, max: 2 }),
      ts: fc.integer({ min: 1, max: 4 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('read' as const),
      c: conversation,
      user,
      seq: fc.option(fc.integer({ min: 0, max: 12 }), { nil: undefined }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('mute' as const),
      c: conversation,
      user,
      muted: fc.boolean(),
    }),
  },
);

interface ModelConversation {
  maxSeq: number;
  lastTs: number;
  preview: Record<string, unknown> | null;
  members: Map<string, { readSeq: number; muted: boolean }>;
}

/** The definition, kept as plainly as it reads. */
class Model {
  readonly conversations = new Map<string, ModelConversation>();

  join(c: string, users: readonly string[], replace: boolean): void {
    let conv = this.conversations.get(c);
    if (!conv)
      this.conversations.set(
        c,
        (conv = { maxSeq: 0, lastTs: 0, preview: null, members: new Map() }),
      );
    if (replace)
      for (const u of [...conv.members.keys()]) if (!users.includes(u)) conv.members.delete(u);
    for (const u of users)
      if (!conv.members.has(u)) conv.members.set(u, { readSeq: conv.maxSeq, muted: false });
  }

  list(u: string, limit: number): Membership[] {
    const all: Membership[] = [];
    for (const [id, conv] of this.conversations) {
      const m = conv.members.get(u);
      if (!m) continue;
      all.push({
        conversation: id,
        maxSeq: conv.maxSeq,
        readSeq: m.readSeq,
        muted: m.muted,
        lastTs: conv.lastTs,
        preview: conv.preview,
      });
    }
    all.sort((a, b) => {
      if (a.lastTs !== b.lastTs) return b.lastTs - a.lastTs;
      if (a.maxSeq !== b.maxSeq) return b.maxSeq - a.maxSeq;
      return a.conversation < b.conversation ? -1 : 1;
    });
    return all.slice(0, limit);
  }
}

async function apply(store: BubbleStore, model: Model, op: Op): Promise<void> {
  const conversations = store.conversations;
  const conv = model.conversations.get(op.c);
  switch (op.op) {
    case 'replace':
    case 'add':
      await (op.op === 'replace'
        ? conversations.replaceMembers(op.c, op.members)
        : conversations.addMembers(op.c, op.members));
      model.join(op.c, op.members, op.op === 'replace');
      return;
    case 'remove':
      await conversations.removeMember(op.c, op.user);
      conv?.members.delete(op.user);
      return;
    case 'dissolve':
      await conversations.dissolve(op.c);
      model.conversations.delete(op.c);
      return;
    case 'message': {
      const seq = Math.max(1, (conv?.maxSeq ?? 0) + op.step);
      const preview = { text: `m${seq}` };
      const result = await conversations.ingest(op.c, [
        { seq, from: op.from, ts: op.ts * 1000, preview },
      ]);
      expect(result === null).toBe(conv === undefined);
      if (!conv) return;
      if (seq > conv.maxSeq) Object.assign(conv, { maxSeq: seq, lastTs: op.ts * 1000, preview });
      const sender = conv.members.get(op.from);
      if (sender) sender.readSeq = Math.max(sender.readSeq, seq);
      return;
    }
    case 'read': {
      await conversations.read(op.c, op.user, op.seq);
      const m = conv?.members.get(op.user);
      if (conv && m) m.readSeq = Math.max(m.readSeq, Math.min(op.seq ?? conv.maxSeq, conv.maxSeq));
      return;
    }
    case 'mute': {
      await conversations.setMuted(op.c, op.user, op.muted);
      const m = conv?.members.get(op.user);
      if (m) m.muted = op.muted;
      return;
    }
  }
}

async function checkLists(store: BubbleStore, model: Model, after: string): Promise<void> {
  for (const u of USERS) {
    for (let limit = 1; limit <= INDEX_SIZE; limit++) {
      const got = await store.conversations.conversationList(u, limit);
      expect(got, `${u}, limit ${limit}, after ${after}`).toEqual(model.list(u, limit));
    }
  }
}

type MakeStore = () => BubbleStore;

function listProperty(makeStore: () => MakeStore, numRuns: number): () => Promise<void> {
  return async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(opArb, { minLength: 10, maxLength: 40, size: 'max' }),
        async (ops) => {
          const store = makeStore()();
          const model = new Model();
          try {
            for (const [i, op] of ops.entries()) {
              await apply(store, model, op);
              await checkLists(store, model, `op ${i} ${JSON.stringify(op)}`);
            }
          } finally {
            await store.close();
          }
        },
      ),
      { numRuns },
    );
  };
}

/** 130 conversations of one user with the default index: the list serves the 100 most recent. */
function capCheck(makeStore: () => MakeStore): () => Promise<void> {
  return async () => {
    const store = makeStore()();
    try {
      const service = new BadgeService(store, new ManualClock(Date.UTC(2026, 0, 1)));
      const model = new Model();
      for (let i = 0; i < 130; i++) {
        const c = `k${i}`;
        await store.conversations.replaceMembers(c, ['reader', `peer${i}`]);
        model.join(c, ['reader', `peer${i}`], true);
        // Seq and ts: a few ties on ts, ordered by seq then id.
        const seq = 1 + (i % 3);
        const ts = 1000 * Math.floor(i / 4);
        await store.conversations.ingest(c, [{ seq, from: `peer${i}`, ts }]);
        Object.assign(model.conversations.get(c)!, { maxSeq: seq, lastTs: ts, preview: null });
      }
      const list = await service.conversationList('reader', 1000);
      expect(list.map((e) => e.id)).toEqual(model.list('reader', 100).map((m) => m.conversation));
      const five = await service.conversationList('reader', 5);
      expect(five.map((e) => e.id)).toEqual(model.list('reader', 5).map((m) => m.conversation));
    } finally {
      await store.close();
    }
  };
}

describe('conversation list against the definition [memory]', () => {
  const make = () => () => new MemoryStore({ pools: 16 });
  it('random memberships, messages, reads and mutes', listProperty(make, 60), 120_000);
  it('serves at most the 100 most recent', capCheck(make));
});

describe('conversation list against the definition [redis]', () => {
  let server: RedisServerHandle | undefined;
  beforeAll(async () => {
    server = await startRedisServer();
  });
  afterAll(async () => {
    await server?.stop();
  });
  const small = () => () =>
    new RedisStore({
      url: server!.url,
      keyPrefix: uniquePrefix('list'),
      pools: 16,
      largeGroup: LARGE_GROUP,
      listIndexSize: INDEX_SIZE,
    });
  it('random memberships, messages, reads and mutes', listProperty(small, 40), 240_000);
  it(
    'serves at most the 100 most recent (default index)',
    capCheck(
      () => () => new RedisStore({ url: server!.url, keyPrefix: uniquePrefix('list'), pools: 16 }),
    ),
  );
  it(
    'serves at most the 100 most recent (an index of exactly 100, trimmed)',
    capCheck(
      () => () =>
        new RedisStore({
          url: server!.url,
          keyPrefix: uniquePrefix('list'),
          pools: 16,
          listIndexSize: 100,
        }),
    ),
  );
});

describe('conversation list against the definition [redis cluster]', () => {
  const cluster = useRedisCluster();
  const small = () => () =>
    new RedisStore({
      clusterNodes: cluster.nodes,
      keyPrefix: uniquePrefix('list'),
      pools: 16,
      largeGroup: LARGE_GROUP,
      listIndexSize: INDEX_SIZE,
    });
  it('random memberships, messages, reads and mutes', listProperty(small, 15), 240_000);
});
