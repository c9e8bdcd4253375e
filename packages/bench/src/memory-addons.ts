import type { BadgeService } from '@bubble/badges';
import { mulberry32 } from '@bubble/protocol';
import { RedisKeys, type RedisStore } from '@bubble/store';
import type { Redis } from 'ioredis';
import { KEY_PREFIX, round2 } from './live-stack.js';
import { conversationMemory } from './redis-memory.js';
import { drawFollows, ZipfSampler, type Workload } from './workload.js';

/**
 * Two small measurements `bench memory` adds after the lifecycle job: the follow list's bytes
 * per follow at exactly `follows` follows a user (the bar's point), and what memberships and
 * conversation cursors cost a user (they stay after the drop: docs/semantics.md, Lifecycle).
 */

const INSTALL_BATCH = 500;

/**
 * `users` new users with exactly `follows` follows each (drawn as the workload draws them:
 * popular authors first, then anyone), stored as a role stores them: installed from a sources
 * answer on an on-demand store, replaced otherwise. MEMORY USAGE of each user's follow list.
 */
export async function followListBytes(
  store: RedisStore,
  admin: Redis,
  workload: Workload,
  options: { users: number; follows: number; pools: number; seed: number; idChars?: number },
) {
  const random = mulberry32(options.seed);
  const rank = new ZipfSampler(workload.authors.length, 0.9, random);
  const keys = new RedisKeys(KEY_PREFIX, options.pools);
  const { idChars } = options;
  const tag = idChars === undefined ? '' : `-${idChars}`;
  const users = Array.from({ length: options.users }, (_, i) => `f${options.follows}${tag}-${i}`);
  // With `idChars`: the same authors under ids of that length ("a" and the index, zero-padded).
  const idOf = (a: number) =>
    idChars === undefined ? workload.authors[a]! : `a${String(a).padStart(idChars - 1, '0')}`;
  let chars = 0;
  const followsOf = (): string[] => Array.from(drawFollows(options.follows, rank, random), idOf);
  for (let i = 0; i < users.length; i += INSTALL_BATCH) {
    const batch = users.slice(i, i + INSTALL_BATCH).map((user) => {
      const follows = followsOf();
      for (const id of follows) chars += id.length;
      return { user, follows };
    });
    if (store.sources.onDemand) {
      await store.sources.install(
        batch.map(({ user, follows }) => ({ user, answer: { follows, topics: [] } })),
        { follows: 2000, topics: 2000 },
      );
    } else {
      await Promise.all(batch.map(({ user, follows }) => store.follows.replace(user, follows)));
    }
  }
  const usage = await memoryUsage(
    admin,
    users.map((user) => keys.follows(user)),
  );
  const edges = options.users * options.follows;
  return {
    users: options.users,
    follows: options.follows,
    meanIdChars: round2(chars / edges),
    bytesPerUser: Math.round(usage / options.users),
    bytesPerFollow: round2(usage / edges),
  };
}

/**
 * `users` of the workload (dropped by now) in `perUser` conversations of `perUser` members each,
 * `messages` messages in each, and a read cursor in every one (POST /v1/cursors' path, which
 * does not count as a sight). What is kept per user: their own conversation keys (im:{u:…}) and
 * their field of each conversation's member hash (which holds the read seq); each
 * conversation's own state (meta) is reported apart: it is per conversation, not per member.
 */
export async function conversationBytes(
  service: BadgeService,
  admin: Redis,
  workload: Workload,
  options: { users: number; perUser: number; messages: number; now: number },
) {
  const { users: m, perUser: k } = options;
  if (m % k !== 0 || m < k) throw new Error('memory: conversation users must be a multiple of k');
  const before = await conversationMemory(admin, KEY_PREFIX);
  const users = workload.users.slice(0, m);
  const stride = m / k;
  // Conversation c holds users c, c + m/k, c + 2m/k, …: every user is in exactly k of them.
  const conversations = Array.from({ length: m }, (_, c) => ({
    id: `mc${c}`,
    members: Array.from({ length: k }, (_, j) => users[(c + j * stride) % m]!),
  }));
  for (let i = 0; i < conversations.length; i += 200) {
    const slice = conversations.slice(i, i + 200);
    await Promise.all(slice.map(({ id, members }) => service.replaceMembers(id, members)));
    await Promise.all(
      slice.map(({ id, members }) =>
        service.ingestMessages(
          id,
          Array.from({ length: options.messages }, (_, s) => ({
            seq: s + 1,
            from: members[s % k]!,
            ts: options.now - (options.messages - s) * 1000,
            preview: { text: `message ${s + 1}` },
          })),
        ),
      ),
    );
  }
  const cursorsOf = new Map<string, Record<string, number>>();
  conversations.forEach(({ id, members }, c) => {
    members.forEach((user, j) => {
      let cursors = cursorsOf.get(user);
      if (!cursors) cursorsOf.set(user, (cursors = {}));
      cursors[id] = 1 + ((c + j) % options.messages);
    });
  });
  const entries = [...cursorsOf].map(([user, conversations]) => ({ user, conversations }));
  for (let i = 0; i < entries.length; i += 200) {
    await service.migrateCursors({ users: entries.slice(i, i + 200) });
  }
  const after = await conversationMemory(admin, KEY_PREFIX);
  const perUserBytes = after.user - before.user + (after.members - before.members);
  return {
    users: m,
    conversationsPerUser: k,
    membersPerConversation: k,
    messagesPerConversation: options.messages,
    bytesPerUser: Math.round(perUserBytes / m),
    bytesPerMembership: round2(perUserBytes / (m * k)),
    userKeysBytesPerUser: Math.round((after.user - before.user) / m),
    memberFieldsBytesPerUser: Math.round((after.members - before.members) / m),
    sharedBytesPerConversation: Math.round((after.shared - before.shared) / m),
  };
}

async function memoryUsage(admin: Redis, keys: readonly string[]): Promise<number> {
  let total = 0;
  for (let i = 0; i < keys.length; i += 1000) {
    const pipeline = admin.pipeline();
    for (const key of keys.slice(i, i + 1000))
      pipeline.call('MEMORY', 'USAGE', key, 'SAMPLES', '0');
    for (const [err, usage] of (await pipeline.exec()) ?? []) {
      if (err) throw err;
      if (usage === null) throw new Error('memory: a follow list is missing');
      total += Number(usage);
    }
  }
  return total;
}
