/**
 * Property: every platform op sent through the ingest stream gives the same badges as the same
 * op called on the service (what the HTTP routes call) and as the brute-force definition of
 * docs/semantics.md. Random sequences of every op of the op table (follows, posts, deletes,
 * presence, notices, red dots, memberships, messages, and invalid ones) are XADDed to P = 2
 * partitions (each op on its entity's partition, as platforms append them) and consumed by one
 * IngestConsumers against a real redis-server; the same sequence runs on a second prefix
 * through BadgeService. After each run every user's badge is compared three ways, and the
 * entries the service refused (a 4xx) are exactly the stream's dead letters.
 */
import { BadgeService, platformOpEntity } from '@bubble/badges';
import { IngestConsumers } from '@bubble/events';
import { BubbleError } from '@bubble/protocol';
import { RedisStore, ingestPartitionOf, readIngestBacklog } from '@bubble/store';
import {
  startRedisServer,
  uniquePrefix,
  waitFor,
  type RedisServerHandle,
} from '@bubble/test-utils';
import fc from 'fast-check';
import { pino } from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { badgeState, type BadgeState } from '../support/badges.js';

const USERS = ['u0', 'u1', 'u2'] as const;
const AUTHORS = ['a0', 'a1', 'a2'] as const;
const POST_IDS = ['p0', 'p1', 'p2', 'p3'] as const;
/** c1 and c3 share a partition (FNV-1a mod 2), so their messages meet in one read; c2 does not. */
const CONVERSATIONS = ['c1', 'c2', 'c3'] as const;
const REDDOTS = ['r1', 'r2'] as const;
const PARTITIONS = 2;
const POOLS = 4;
const DISPLAY_CAP = 99;
const logger = pino({ level: 'silent' });

interface Op {
  op: string;
  body: unknown;
}

/** The fields the bodies of this test's ops have (each op a few of them). */
interface Fields {
  user: string;
  author: string;
  authors: string[];
  /** A post's id, or a notice's (a number). */
  id: string & number;
  posts: { author: string; id: string; ts: number }[];
  online: boolean;
  name: string;
  ts: number;
  conversation: string;
  members: string[];
  seq: number;
  from: string;
  messages: { seq: number; from: string }[];
}

// ------------------------------------------------------------------------------------- model

class Model {
  readonly follows = new Map<string, Set<string>>();
  readonly posted = new Set<string>();
  readonly deleted = new Set<string>();
  readonly live = new Set<number>();
  readonly marked = new Set<string>();
  readonly conversations = new Map<string, { maxSeq: number; members: Map<string, number> }>();

  /** Applies one op as docs/semantics.md defines it; the error code it is refused with, or 'ok'. */
  apply({ op, body }: Op): string {
    const b = body as Fields;
    switch (op) {
      case 'follow':
        this.followsOf(b.user).add(b.author);
        return 'ok';
      case 'unfollow':
        this.followsOf(b.user).delete(b.author);
        return 'ok';
      case 'replaceFollows':
        this.follows.set(b.user, new Set(b.authors));
        return 'ok';
      case 'post':
        for (const post of 'posts' in b ? b.posts : [b]) {
          this.posted.add(`${post.author}/${post.id}`);
        }
        return 'ok';
      case 'deletePost':
        this.deleted.add(`${b.author}/${b.id}`);
        return 'ok';
      case 'presence':
        return 'ok';
      case 'notice':
        this.live.add(b.id);
        return 'ok';
      case 'withdrawNotice':
        this.live.delete(b.id);
        return 'ok';
      case 'reddot':
        this.marked.add(b.name);
        return 'ok';
      case 'clearReddot':
        this.marked.delete(b.name);
        return 'ok';
      case 'members':
      case 'addMembers': {
        let c = this.conversations.get(b.conversation);
        if (!c) this.conversations.set(b.conversation, (c = { maxSeq: 0, members: new Map() }));
        const users = b.members;
        if (op === 'members') {
          for (const member of [...c.members.keys()]) {
            if (!users.includes(member)) c.members.delete(member);
          }
        }
        for (const member of users) if (!c.members.has(member)) c.members.set(member, c.maxSeq);
        return 'ok';
      }
      case 'removeMember':
        this.conversations.get(b.conversation)?.members.delete(b.user);
        return 'ok';
      case 'dissolve':
        this.conversations.delete(b.conversation);
        return 'ok';
      case 'message': {
        const c = this.conversations.get(b.conversation);
        if (!c) return 'UB_ERR_NOT_FOUND';
        const batch = 'messages' in b ? b.messages : [b];
        for (const { seq, from } of batch) {
          c.maxSeq = Math.max(c.maxSeq, seq);
          const readSeq = c.members.get(from);
          if (readSeq !== undefined) c.members.set(from, Math.max(readSeq, seq));
        }
        return 'ok';
      }
      default:
        return 'UB_ERR_BAD_REQUEST';
    }
  }

  badge(user: string): BadgeState {
    const follows = this.follows.get(user) ?? new Set<string>();
    const feed = [...this.posted].filter(
      (key) => !this.deleted.has(key) && follows.has(key.slice(0, key.indexOf('/'))),
    ).length;
    // Every user was seen once, before any notice: seen = 0.
    const notices = this.live.size;
    const conversations: Record<string, number> = {};
    let conversationsTotal = 0;
    for (const [id, c] of this.conversations) {
      const readSeq = c.members.get(user);
      if (readSeq === undefined) continue;
      const unread = c.maxSeq - readSeq;
      if (unread > 0) conversations[id] = unread;
      conversationsTotal += unread;
    }
    const total = feed + notices + conversationsTotal;
    return {
      feed,
      notices,
      conversations,
      conversationsTotal,
      reddots: [...this.marked].sort(),
      total,
      display: total > DISPLAY_CAP ? `${DISPLAY_CAP}+` : String(total),
    };
  }

  private followsOf(user: string): Set<string> {
    let set = this.follows.get(user);
    if (!set) this.follows.set(user, (set = new Set()));
    return set;
  }
}

// ------------------------------------------------------------------------------------- ops

const user = fc.constantFrom(...USERS);
const author = fc.constantFrom(...AUTHORS);
const conversation = fc.constantFrom(...CONVERSATIONS);
const reddot = fc.constantFrom(...REDDOTS);
const noticeId = fc.integer({ min: 1, max: 5 });
const BASE_TS = Date.now() - 3_600_000;
/** One ts per post id, so a repeated post is the same post (the first stored ts wins anyway). */
const postOf = (a: string, id: string) => ({
  author: a,
  id,
  ts: BASE_TS + POST_IDS.indexOf(id as never),
});
const postRef = fc.tuple(author, fc.constantFrom(...POST_IDS));
const message = fc.record({ seq: fc.integer({ min: 1, max: 8 }), from: user });

const anyOp: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constant('follow'), body: fc.record({ user, author }) }),
  fc.record({ op: fc.constant('unfollow'), body: fc.record({ user, author }) }),
  fc.record({
    op: fc.constant('replaceFollows'),
    body: fc.record({ user, authors: fc.subarray([...AUTHORS]) }),
  }),
  { arbitrary: postRef.map(([a, id]): Op => ({ op: 'post', body: postOf(a, id) })), weight: 3 },
  fc
    .array(postRef, { minLength: 1, maxLength: 3 })
    .map((refs): Op => ({ op: 'post', body: { posts: refs.map(([a, id]) => postOf(a, id)) } })),
  postRef.map(([a, id]): Op => ({ op: 'deletePost', body: { author: a, id } })),
  fc.record({ op: fc.constant('presence'), body: fc.record({ user, online: fc.boolean() }) }),
  noticeId.map((id): Op => ({ op: 'notice', body: { id } })),
  noticeId.map((id): Op => ({ op: 'withdrawNotice', body: { id } })),
  reddot.map((name): Op => ({ op: 'reddot', body: { name, ts: BASE_TS } })),
  reddot.map((name): Op => ({ op: 'clearReddot', body: { name } })),
  fc
    .tuple(fc.constantFrom('members', 'addMembers'), conversation, fc.subarray([...USERS]))
    .map(([op, id, members]): Op => ({ op, body: { conversation: id, members } })),
  fc.tuple(conversation, user).map(([id, u]): Op => ({
    op: 'removeMember',
    body: { conversation: id, user: u },
  })),
  conversation.map((id): Op => ({ op: 'dissolve', body: { conversation: id } })),
  {
    arbitrary: fc.tuple(conversation, message).map(([id, m]): Op => ({
      op: 'message',
      body: { conversation: id, ...m },
    })),
    weight: 3,
  },
  fc
    .tuple(conversation, fc.array(message, { minLength: 1, maxLength: 3 }))
    .map(([id, messages]): Op => ({ op: 'message', body: { conversation: id, messages } })),
);

/** The HTTP route's call for each op: the same BadgeService methods, in the order given. */
async function callService(service: BadgeService, { op, body }: Op): Promise<string> {
  const b = body as Fields;
  try {
    switch (op) {
      case 'follow':
        await service.follow(b.user, b.author);
        break;
      case 'unfollow':
        await service.unfollow(b.user, b.author);
        break;
      case 'replaceFollows':
        await service.replaceFollows(b.user, b.authors);
        break;
      case 'post':
        await service.ingestPosts('posts' in b ? b.posts : [b]);
        break;
      case 'deletePost':
        await service.deletePost(b.author, b.id);
        break;
      case 'presence':
        await service.setPresence(b.user, b.online, 60_000);
        break;
      case 'notice':
        await service.publishNotice(b.id);
        break;
      case 'withdrawNotice':
        await service.withdrawNotice(b.id);
        break;
      case 'reddot':
        await service.markReddot(b.name, b.ts);
        break;
      case 'clearReddot':
        await service.clearReddot(b.name);
        break;
      case 'members':
        await service.replaceMembers(b.conversation, b.members);
        break;
      case 'addMembers':
        await service.addMembers(b.conversation, b.members);
        break;
      case 'removeMember':
        await service.removeMember(b.conversation, b.user);
        break;
      case 'dissolve':
        await service.dissolve(b.conversation);
        break;
      case 'message':
        await service.ingestMessages(b.conversation, 'messages' in b ? b.messages : [b]);
        break;
      default:
        throw new Error(`no call for ${op}`);
    }
    return 'ok';
  } catch (err) {
    if (err instanceof BubbleError) return err.code;
    throw err;
  }
}

// ------------------------------------------------------------------------------------- run

let server: RedisServerHandle;
beforeAll(async () => {
  server = await startRedisServer();
});
afterAll(async () => {
  await server.stop();
});

/** waitFor for a value: `fn` answers false until it has one. */
async function waitForValue<T>(fn: () => Promise<T | false>): Promise<T> {
  return (await waitFor(fn)) as T;
}

function newEngine(label: string): { store: RedisStore; service: BadgeService } {
  const store = new RedisStore({ url: server.url, keyPrefix: uniquePrefix(label), pools: POOLS });
  return { store, service: new BadgeService(store, store.clock, { displayCap: DISPLAY_CAP }) };
}

it(
  'ops through the stream = the same ops on the service = the brute-force model',
  { timeout: 120_000 },
  async () => {
    let runs = 0;
    let entries = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(anyOp, { minLength: 5, maxLength: 40 }), async (ops) => {
        runs++;
        entries += ops.length;
        const direct = newEngine('direct');
        const streamed = newEngine('stream');
        const consumers = new IngestConsumers({
          redis: streamed.store.redis,
          keys: streamed.store.keys,
          service: streamed.service,
          consumer: 'prop',
          partitions: PARTITIONS,
          claimMs: 60_000,
          maxDeliveries: 3,
          blockMs: 100,
          logger,
        });
        try {
          // Each user is seen once before anything happens: its notice cursor starts at 0.
          for (const u of USERS) {
            await direct.service.badge(u, { seen: true });
            await streamed.service.badge(u, { seen: true });
          }
          const model = new Model();
          let refused = 0;
          const pipeline = streamed.store.redis.pipeline();
          for (const op of ops) {
            const expected = model.apply(op);
            const outcome = await callService(direct.service, op);
            expect(outcome, `${op.op} ${JSON.stringify(op.body)}`).toBe(expected);
            if (outcome !== 'ok') refused++;
            const partition = ingestPartitionOf(platformOpEntity(op.op, op.body), PARTITIONS);
            pipeline.xadd(
              streamed.store.keys.ingest(partition),
              '*',
              'v',
              '1',
              'op',
              op.op,
              'body',
              JSON.stringify(op.body),
            );
          }
          await pipeline.exec();
          consumers.start();
          const backlog = await waitForValue(async () => {
            const all = await readIngestBacklog(
              streamed.store.redis,
              streamed.store.keys,
              PARTITIONS,
            );
            return all.every((one) => one.lag === 0 && one.pending === 0) && all;
          });
          const dead = backlog.reduce((sum, one) => sum + one.deadLetters, 0);
          expect(dead, 'the entries the service refused are the dead letters').toBe(refused);
          for (const u of USERS) {
            const expected = model.badge(u);
            expect(badgeState(await direct.service.badge(u)), `service, ${u}`).toEqual(expected);
            expect(badgeState(await streamed.service.badge(u)), `stream, ${u}`).toEqual(expected);
          }
        } finally {
          await consumers.close();
          await direct.store.close();
          await streamed.store.close();
        }
      }),
      { numRuns: Number(process.env.INGEST_PROPERTY_RUNS ?? 100) },
    );
    console.log(`[ingest-ops property] ${runs} runs, ${entries} entries`);
  },
);
