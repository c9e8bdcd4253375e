import { idRecord } from '@bubble/protocol';
import type { LoggedWriterOptions, RedisChangeLog } from '../change-log/redis-change-log.js';
import { marksEventsByPool } from '../marks/marks-events.js';
import type { RedisClient } from '../redis/connect.js';
import type { RedisKeys } from '../redis/keys.js';
import { ScriptStatus } from '../redis/script-status.js';
import { scripts, type ScriptRunner } from '../redis/scripts.js';
import type { SlotSpread } from '../redis/slot-spread.js';
import { byActivity } from './conversation-order.js';
import type {
  ConversationMessage,
  Conversations,
  Membership,
  MembershipChange,
  MembershipSeqs,
  MessageIngest,
  ReadSeqMove,
} from './conversations.js';

/** Users per SREM of a conversation's unlogged set (a million-member join stays in chunks). */
const SREM_CHUNK = 10_000;
/** Conversations per readManyMemberSeqs call on a standalone Redis: a bounded step for the server. */
const SEQS_CHUNK = 500;

/** Conversations per advanceManyMemberSeqs call on a standalone Redis. */
const MOVES_CHUNK = 500;

/** Set in a user's activity seqs once a trim dropped an entry (ids never contain `~`). */
const TRIMMED_FIELD = '~trimmed';

/**
 * A membership change owes each user it adds or removes a `marks` event in their pool's log, in
 * another slot: the scripts put them in the conversation's unlogged set, the events are appended,
 * then the set is emptied of them. A retry of a change cut in between finds them there.
 */
export class RedisConversations implements Conversations {
  private readonly redis: RedisClient;
  private readonly run: ScriptRunner;
  private readonly keys: RedisKeys;
  private readonly log: RedisChangeLog;
  private readonly largeGroup: number;
  private readonly listIndexSize: number;
  private readonly spread: SlotSpread;

  constructor(
    shared: LoggedWriterOptions & { largeGroup: number; listIndexSize: number; spread: SlotSpread },
  ) {
    this.spread = shared.spread;
    this.redis = shared.client;
    this.run = scripts(shared.client);
    this.keys = shared.keys;
    this.log = shared.log;
    this.largeGroup = shared.largeGroup;
    this.listIndexSize = shared.listIndexSize;
  }

  async replaceMembers(
    conversation: string,
    members: readonly string[],
  ): Promise<MembershipChange> {
    return this.join(conversation, members, 'replace');
  }

  async addMembers(conversation: string, members: readonly string[]): Promise<MembershipChange> {
    return this.join(conversation, members, 'add');
  }

  async removeMember(conversation: string, user: string): Promise<boolean> {
    const { keys } = this;
    const [removed, owed, countAfter] = await this.run.removeMember(
      [keys.conversationMembers(conversation), keys.conversationUnlogged(conversation)],
      [user],
    );
    await Promise.all([
      this.redis.srem(keys.userConversations(user), conversation),
      this.forget(user, conversation),
    ]);
    // Fell to BUBBLE_LARGE_GROUP: its members are written per message again.
    if (removed === 1 && countAfter === this.largeGroup) await this.becameSmall(conversation);
    if (owed === 1) await this.logMarks(conversation, [user]);
    return removed === 1;
  }

  async dissolve(conversation: string): Promise<string[]> {
    const { keys } = this;
    const [members, owed] = await this.run.dissolveConversation(
      [
        keys.conversation(conversation),
        keys.conversationMembers(conversation),
        keys.conversationUnlogged(conversation),
      ],
      [],
    );
    // Everyone owed: a retry also finishes the index entries the failed call left.
    await Promise.all(
      owed.flatMap((user) => [
        this.redis.srem(keys.userConversations(user), conversation),
        this.forget(user, conversation),
      ]),
    );
    await this.logMarks(conversation, owed);
    return members;
  }

  async ingest(
    conversation: string,
    messages: readonly ConversationMessage[],
  ): Promise<MessageIngest | null> {
    const args: string[] = [];
    for (const { seq, from, ts, preview } of messages) {
      args.push(String(seq), from, String(ts), preview ? JSON.stringify(preview) : '');
    }
    const { keys } = this;
    const result = await this.run.ingestMessages(
      [keys.conversation(conversation), keys.conversationMembers(conversation)],
      [this.largeGroup, ...args],
    );
    if (result === ScriptStatus.Refused) return null;
    const [maxSeq, lastTs, members] = result;
    // A small conversation's members' indexes, each in its user's slot; a retry writes them again.
    if (members !== 0) {
      await Promise.all(members.map((user) => this.index(user, [conversation, maxSeq, lastTs])));
    }
    const senders = idRecord<number>();
    for (let i = 3; i < result.length; i += 2) {
      senders[result[i] as string] = Number(result[i + 1]);
    }
    return { maxSeq: Number(maxSeq), senders };
  }

  async read(conversation: string, user: string, seq?: number): Promise<number | null> {
    const { keys } = this;
    const cursor = await this.run.readConversation(
      [keys.conversation(conversation), keys.conversationMembers(conversation)],
      [user, seq === undefined ? '-' : String(seq)],
    );
    return cursor === null ? null : Number(cursor);
  }

  async advanceReadSeqs(moves: readonly ReadSeqMove[]): Promise<Array<number | null>> {
    const { keys } = this;
    // Per conversation, the indexes of its moves; the answers go back to them.
    const byConversation = new Map<string, number[]>();
    moves.forEach(({ conversation }, i) => {
      const of = byConversation.get(conversation);
      if (of) of.push(i);
      else byConversation.set(conversation, [i]);
    });
    const pairsOf = (of: readonly number[]) =>
      of.flatMap((i) => [moves[i]!.user, moves[i]!.seq] as const);
    const keysOf = (id: string) => [keys.conversation(id), keys.conversationMembers(id)] as const;
    const replies = await this.spread.map(
      [...byConversation],
      MOVES_CHUNK,
      ([id, of]) => this.run.advanceMemberSeqs(keysOf(id), pairsOf(of)),
      async (chunk) => {
        const flat = await this.run.advanceManyMemberSeqs(
          chunk.flatMap(([id]) => keysOf(id)),
          chunk.flatMap(([, of]) => [of.length, ...pairsOf(of)]),
        );
        let at = 0;
        return chunk.map(([, of]) => flat.slice(at, (at += of.length)));
      },
    );
    const after: Array<number | null> = moves.map(() => null);
    [...byConversation.values()].forEach((of, c) => {
      of.forEach((i, j) => {
        const cursor = replies[c]![j];
        after[i] = cursor === null || cursor === undefined ? null : Number(cursor);
      });
    });
    return after;
  }

  async setMuted(conversation: string, user: string, muted: boolean): Promise<boolean> {
    const members = this.keys.conversationMembers(conversation);
    return (await this.run.muteMember([members], [user, muted ? '1' : '0'])) === 1;
  }

  async memberships(user: string): Promise<Membership[]> {
    return this.membershipRows(user, await this.redis.smembers(this.keys.userConversations(user)));
  }

  /** The memberships of `user` among `ids`; the others (left, dissolved, joining) left out. */
  private async membershipRows(user: string, ids: readonly string[]): Promise<Membership[]> {
    const { keys } = this;
    // One round trip for all of them (auto-pipelined); each pair reads one slot.
    const rows = await Promise.all(
      ids.map((id) =>
        Promise.all([
          this.redis.hmget(keys.conversation(id), 'maxSeq', 'lastTs', 'preview'),
          this.redis.hget(keys.conversationMembers(id), user),
        ]),
      ),
    );
    const out: Membership[] = [];
    ids.forEach((conversation, i) => {
      const [[maxSeq, lastTs, preview], member] = rows[i]!;
      // An index entry of a join in progress (or cut off half-way) is not a membership yet.
      if (member === null || maxSeq === null) return;
      out.push({
        conversation,
        maxSeq: Number(maxSeq),
        readSeq: Number(/^\d+/.exec(member)![0]),
        muted: member.endsWith('m'),
        lastTs: Number(lastTs ?? 0),
        preview: preview ? (JSON.parse(preview) as Record<string, unknown>) : null,
      });
    });
    return out;
  }

  async conversationList(user: string, limit: number): Promise<Membership[]> {
    const { keys, redis } = this;
    const activity = keys.userActivity(user);
    const [ranked, large, trimmed, indexed] = await Promise.all([
      redis.zrange(activity, '0', String(limit - 1), 'WITHSCORES'),
      redis.smembers(keys.userLargeConversations(user)),
      redis.hexists(keys.userActivitySeqs(user), TRIMMED_FIELD),
      redis.zcard(activity),
    ]);
    const fromIndex = new Set<string>();
    for (let i = 0; i < ranked.length; i += 2) fromIndex.add(ranked[i]!);
    const full = fromIndex.size === limit;
    let reachesEnd = !full;
    if (full) {
      // Every conversation tied with the last one: seq and id order them, not the score.
      const boundary = ranked[ranked.length - 1]!;
      const [tied, last] = await Promise.all([
        redis.zrangebyscore(activity, boundary, boundary),
        redis.zrange(activity, '-1', '-1', 'WITHSCORES'),
      ]);
      for (const id of tied) fromIndex.add(id);
      reachesEnd = last[1] === boundary;
    }
    const rows = await this.membershipRows(user, [...new Set([...fromIndex, ...large])]);
    const indexedRows = rows.filter((m) => fromIndex.has(m.conversation)).length;
    // The index may miss conversations (trimmed, or entries left by departures cut short): it is
    // rebuilt from every membership, once, and the list served from them.
    const short = indexedRows < limit && (trimmed === 1 || indexed > fromIndex.size);
    if (short || (trimmed === 1 && full && reachesEnd)) {
      return this.rebuildIndex(user, new Set(large), limit);
    }
    return rows.sort(byActivity).slice(0, limit);
  }

  async membershipSeqs(
    users: readonly string[],
    indexesRead?: ReadonlyArray<readonly string[]>,
  ): Promise<MembershipSeqs[][]> {
    const { keys } = this;
    // Two round trips for the whole batch (auto-pipelined): the users' indexes, unless read
    // already, then per distinct conversation one call for its maxSeq and the batch's cursors.
    const indexes =
      indexesRead ??
      (await Promise.all(users.map((user) => this.redis.smembers(keys.userConversations(user)))));
    const askers = new Map<string, number[]>();
    indexes.forEach((ids, i) => {
      for (const id of ids) {
        const of = askers.get(id);
        if (of) of.push(i);
        else askers.set(id, [i]);
      }
    });
    const rows = await this.memberSeqRows(askers, users);
    const cursorOf = new Map<
      string,
      { maxSeq: string | null; cursors: Map<number, string | null> }
    >();
    let row = 0;
    for (const [id, of] of askers) {
      const [maxSeq, ...cursors] = rows[row++]!;
      cursorOf.set(id, { maxSeq, cursors: new Map(of.map((i, j) => [i, cursors[j]!])) });
    }
    return indexes.map((ids, i) => {
      const out: MembershipSeqs[] = [];
      for (const conversation of ids) {
        const { maxSeq, cursors } = cursorOf.get(conversation)!;
        const member = cursors.get(i)!;
        // As in memberships(): an index entry of a join in progress is not a membership yet.
        if (member === null || maxSeq === null) continue;
        out.push({
          conversation,
          maxSeq: Number(maxSeq),
          readSeq: Number(/^\d+/.exec(member)![0]),
          muted: member.endsWith('m'),
        });
      }
      return out;
    });
  }

  /** Per conversation of `askers`, in its order: maxSeq, then the cursor of each user asking. */
  private async memberSeqRows(
    askers: ReadonlyMap<string, readonly number[]>,
    users: readonly string[],
  ): Promise<Array<[maxSeq: string | null, ...cursors: Array<string | null>]>> {
    const { keys } = this;
    // Each conversation in its own slot on a Cluster: one call each; else a call per chunk.
    return this.spread.map(
      [...askers],
      SEQS_CHUNK,
      ([id, of]) =>
        this.run.readMemberSeqs(
          [keys.conversation(id), keys.conversationMembers(id)],
          of.map((i) => users[i]!),
        ),
      async (chunk) => {
        const chunkKeys = chunk.flatMap(([id]) => [
          keys.conversation(id),
          keys.conversationMembers(id),
        ]);
        const args = chunk.flatMap(([, of]) => [of.length, ...of.map((i) => users[i]!)]);
        const flat = await this.run.readManyMemberSeqs(chunkKeys, args);
        let at = 0;
        return chunk.map(([, of]) => {
          const row = flat.slice(at, at + 1 + of.length);
          at += 1 + of.length;
          return row as [string | null, ...Array<string | null>];
        });
      },
    );
  }

  async members(conversation: string): Promise<string[] | null> {
    const { keys } = this;
    const [exists, members] = await Promise.all([
      this.redis.exists(keys.conversation(conversation)),
      this.redis.hkeys(keys.conversationMembers(conversation)),
    ]);
    return exists === 1 ? members : null;
  }

  private async join(
    conversation: string,
    members: readonly string[],
    mode: 'add' | 'replace',
  ): Promise<MembershipChange> {
    const { keys } = this;
    // The user's index first: a join cut off half-way leaves an index entry memberships()
    // ignores, never a member whose conversation is missing from their badge.
    await Promise.all(
      members.map((user) => this.redis.sadd(keys.userConversations(user), conversation)),
    );
    const [added, removed, owed, countBefore, countAfter, maxSeq, lastTs] =
      await this.run.joinConversation(
        [
          keys.conversation(conversation),
          keys.conversationMembers(conversation),
          keys.conversationUnlogged(conversation),
        ],
        [mode, ...members],
      );
    await Promise.all(
      removed.flatMap((user) => [
        this.redis.srem(keys.userConversations(user), conversation),
        this.forget(user, conversation),
      ]),
    );
    const wasLarge = countBefore > this.largeGroup;
    const isLarge = countAfter > this.largeGroup;
    if (isLarge) {
      // Crossing up: every member's index entry gives way to their large set.
      const moved = wasLarge
        ? members
        : await this.redis.hkeys(keys.conversationMembers(conversation));
      await Promise.all(
        moved.flatMap((user) => [
          this.redis.sadd(keys.userLargeConversations(user), conversation),
          ...(wasLarge ? [] : [this.unindex(user, conversation)]),
        ]),
      );
    } else if (wasLarge) {
      await this.becameSmall(conversation);
    } else {
      // Every user of the call, not only those added: a retry of a join cut off here finishes it.
      await Promise.all(members.map((user) => this.index(user, [conversation, maxSeq, lastTs])));
    }
    await this.logMarks(conversation, owed);
    return { added, removed };
  }

  /** The conversation now has at most BUBBLE_LARGE_GROUP members: indexed per member again. */
  private async becameSmall(conversation: string): Promise<void> {
    const { keys } = this;
    const [members, [maxSeq = null, lastTs = null]] = await Promise.all([
      this.redis.hkeys(keys.conversationMembers(conversation)),
      this.redis.hmget(keys.conversation(conversation), 'maxSeq', 'lastTs'),
    ]);
    if (maxSeq === null) return;
    await Promise.all(
      members.flatMap((user) => [
        this.redis.srem(keys.userLargeConversations(user), conversation),
        this.index(user, [conversation, maxSeq, lastTs ?? '0']),
      ]),
    );
  }

  /** Writes activity entries (id, seq, lastTs triples) to the user's index, trimmed. */
  private index(user: string, entries: readonly (string | number)[]): Promise<number> {
    const { keys } = this;
    return this.run.indexActivity(
      [keys.userActivity(user), keys.userActivitySeqs(user)],
      [this.listIndexSize, ...entries],
    );
  }

  private async unindex(user: string, conversation: string): Promise<void> {
    const { keys } = this;
    await Promise.all([
      this.redis.zrem(keys.userActivity(user), conversation),
      this.redis.hdel(keys.userActivitySeqs(user), conversation),
    ]);
  }

  /** The user is no member any more: out of their index and their large set. */
  private async forget(user: string, conversation: string): Promise<void> {
    await Promise.all([
      this.unindex(user, conversation),
      this.redis.srem(this.keys.userLargeConversations(user), conversation),
    ]);
  }

  /** Every membership read; the small ones written to a fresh index; the list served from them. */
  private async rebuildIndex(
    user: string,
    large: ReadonlySet<string>,
    limit: number,
  ): Promise<Membership[]> {
    const { keys } = this;
    const all = (await this.memberships(user)).sort(byActivity);
    const entries = all
      .filter((m) => !large.has(m.conversation))
      .flatMap((m) => [m.conversation, m.maxSeq, m.lastTs]);
    await this.run.rebuildActivity(
      [keys.userActivity(user), keys.userActivitySeqs(user)],
      [this.listIndexSize, ...entries],
    );
    return all.slice(0, limit);
  }

  /** Appends a `marks` event for each user (one call per pool), then forgets they were owed. */
  private async logMarks(conversation: string, users: readonly string[]): Promise<void> {
    if (users.length === 0) return;
    await Promise.all(
      [...marksEventsByPool(users, this.keys.pools)].map(([pool, events]) =>
        this.log.appendPoolEvents(pool, events),
      ),
    );
    const unlogged = this.keys.conversationUnlogged(conversation);
    for (let i = 0; i < users.length; i += SREM_CHUNK) {
      await this.redis.srem(unlogged, ...users.slice(i, i + SREM_CHUNK));
    }
  }
}
