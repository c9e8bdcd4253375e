/**
 * The lifecycle against its definition (docs/semantics.md, Lifecycle), on both engines: random
 * histories of follows, posts, polls, reads of every scope, notices, red dots, memberships,
 * messages and presence; then everyone goes offline and the clock moves past the lookback
 * alone, or past the inactive window too; the leader's jobs run (dropInactiveUsers,
 * expireOfflineBadges); more posts, notices, red dots and messages arrive; then each user
 * returns. Their badge must be the brute-force count of a model in which a stored badge state
 * expired (new epoch, version 1) and, past the inactive window, the feed cursor, notice cursor
 * and red-dot clicks are unset (the notice cursor starts at the highest id) while follows,
 * memberships and conversation cursors are kept.
 */
import { DAY_MS, HOUR_MS, type Badge } from '@bubble/protocol';
import type { BadgeService } from '@bubble/badges';
import fc from 'fast-check';
import { expect, it } from 'vitest';
import { describeEachEngine, manualService, type EngineName } from '../support/engines.js';

const USERS = ['u0', 'u1', 'u2'] as const;
const AUTHORS = ['a1', 'a2'] as const;
const CONVERSATIONS = ['c1', 'c2'] as const;
const REDDOTS = ['r1', 'r2'] as const;
/** A member of every conversation who sends all messages. */
const PEER = 'peer';
const LOOKBACK_DAYS = 7;
const INACTIVE_DAYS = 30;
const RUNS: Record<EngineName, number> = { memory: 60, redis: 15 };

type Op =
  | { kind: 'follow'; user: string; author: string }
  | { kind: 'post'; author: string }
  | { kind: 'poll'; user: string }
  | { kind: 'read'; user: string; scope: 'feed' | 'notices' | 'all' }
  | { kind: 'readReddot'; user: string; name: string }
  | { kind: 'readConversation'; user: string; conversation: string }
  | { kind: 'publish' }
  | { kind: 'mark'; name: string }
  | { kind: 'join'; user: string; conversation: string }
  | { kind: 'message'; conversation: string }
  | { kind: 'presence'; user: string; online: boolean }
  | { kind: 'advance'; hours: number };

class Model {
  highest = 0;
  readonly follows = new Map<string, Set<string>>();
  readonly posts: Array<{ author: string; ts: number }> = [];
  readonly readAt = new Map<string, number>();
  readonly seen = new Map<string, number>();
  readonly marked = new Map<string, number>();
  readonly clicks = new Map<string, Map<string, number>>();
  readonly conversations = new Map<string, { maxSeq: number; members: Map<string, number> }>(
    CONVERSATIONS.map((c) => [c, { maxSeq: 0, members: new Map() }]),
  );
  readonly epochs = new Map<string, Set<string>>();

  see(user: string): void {
    if (!this.seen.has(user)) this.seen.set(user, this.highest);
  }

  badge(user: string, now: number) {
    const follows = this.follows.get(user) ?? new Set();
    const after = Math.max(this.readAt.get(user) ?? -Infinity, now - LOOKBACK_DAYS * DAY_MS);
    const feed = this.posts.filter(
      (p) => follows.has(p.author) && p.ts > after && p.ts <= now,
    ).length;
    const seen = this.seen.get(user)!;
    const notices = Math.max(0, this.highest - seen);
    const conversations: Record<string, number> = {};
    for (const [id, c] of this.conversations) {
      const readSeq = c.members.get(user);
      if (readSeq !== undefined && c.maxSeq > readSeq) conversations[id] = c.maxSeq - readSeq;
    }
    const clicks = this.clicks.get(user);
    const reddots = [...this.marked]
      .filter(([name, at]) => (clicks?.get(name) ?? -Infinity) < at)
      .map(([name]) => name)
      .sort();
    return { feed, notices, conversations, reddots };
  }

  /** The inactive-user job: everything kept for the user alone but follows and memberships. */
  forget(user: string): void {
    this.readAt.delete(user);
    this.seen.delete(user);
    this.clicks.delete(user);
  }
}

async function apply(
  op: Op,
  model: Model,
  service: BadgeService,
  now: () => number,
  advance: (ms: number) => void,
  postIds: { next: number },
): Promise<void> {
  switch (op.kind) {
    case 'follow':
      await service.follow(op.user, op.author);
      if (!model.follows.has(op.user)) model.follows.set(op.user, new Set());
      model.follows.get(op.user)!.add(op.author);
      return;
    case 'post':
      await service.ingestPosts([{ author: op.author, id: `p${postIds.next++}`, ts: now() }]);
      model.posts.push({ author: op.author, ts: now() });
      return;
    case 'poll': {
      const badge = await service.badge(op.user, { seen: true });
      model.see(op.user);
      recordEpoch(model, badge);
      return;
    }
    case 'read': {
      model.see(op.user);
      const badge = await service.read(op.user, { scope: op.scope });
      if (op.scope !== 'notices') model.readAt.set(op.user, now());
      if (op.scope !== 'feed') model.seen.set(op.user, model.highest);
      if (op.scope === 'all') {
        for (const c of model.conversations.values()) {
          if (c.members.has(op.user)) c.members.set(op.user, c.maxSeq);
        }
        for (const name of model.marked.keys()) click(model, op.user, name, now());
      }
      recordEpoch(model, badge);
      return;
    }
    case 'readReddot': {
      model.see(op.user);
      recordEpoch(model, await service.read(op.user, { scope: 'reddot', name: op.name }));
      click(model, op.user, op.name, now());
      return;
    }
    case 'readConversation': {
      const c = model.conversations.get(op.conversation)!;
      if (!c.members.has(op.user)) return;
      const badge = await service.read(op.user, { scope: 'conversation', id: op.conversation });
      model.see(op.user);
      c.members.set(op.user, c.maxSeq);
      recordEpoch(model, badge);
      return;
    }
    case 'publish':
      await service.publishNotice(++model.highest);
      return;
    case 'mark':
      await service.markReddot(op.name);
      model.marked.set(op.name, now());
      return;
    case 'join': {
      await service.addMembers(op.conversation, [op.user]);
      const c = model.conversations.get(op.conversation)!;
      if (!c.members.has(op.user)) c.members.set(op.user, c.maxSeq);
      return;
    }
    case 'message': {
      const c = model.conversations.get(op.conversation)!;
      c.maxSeq++;
      await service.ingestMessages(op.conversation, [{ seq: c.maxSeq, from: PEER, ts: now() }]);
      c.members.set(PEER, c.maxSeq);
      return;
    }
    case 'presence':
      await service.setPresence(op.user, op.online, 60_000);
      return;
    case 'advance':
      advance(op.hours * HOUR_MS);
      return;
  }
}

function click(model: Model, user: string, name: string, at: number): void {
  if (!model.clicks.has(user)) model.clicks.set(user, new Map());
  model.clicks.get(user)!.set(name, at);
}

function recordEpoch(model: Model, badge: Badge): void {
  if (!model.epochs.has(badge.user)) model.epochs.set(badge.user, new Set());
  model.epochs.get(badge.user)!.add(badge.epoch);
}

const user = fc.constantFrom(...USERS);
const author = fc.constantFrom(...AUTHORS);
const conversation = fc.constantFrom(...CONVERSATIONS);
const reddot = fc.constantFrom(...REDDOTS);

const historyOp: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('follow' as const), user, author }),
  fc.record({ kind: fc.constant('post' as const), author }),
  fc.record({ kind: fc.constant('poll' as const), user }),
  fc.record({
    kind: fc.constant('read' as const),
    user,
    scope: fc.constantFrom('feed' as const, 'notices' as const, 'all' as const),
  }),
  fc.record({ kind: fc.constant('readReddot' as const), user, name: reddot }),
  fc.record({ kind: fc.constant('readConversation' as const), user, conversation }),
  fc.record({ kind: fc.constant('publish' as const) }),
  fc.record({ kind: fc.constant('mark' as const), name: reddot }),
  fc.record({ kind: fc.constant('join' as const), user, conversation }),
  fc.record({ kind: fc.constant('message' as const), conversation }),
  fc.record({ kind: fc.constant('presence' as const), user, online: fc.boolean() }),
  fc.record({ kind: fc.constant('advance' as const), hours: fc.integer({ min: 1, max: 12 }) }),
);

/** What arrives while everyone is away: no user acts. */
const awayOp: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('post' as const), author }),
  fc.record({ kind: fc.constant('publish' as const) }),
  fc.record({ kind: fc.constant('mark' as const), name: reddot }),
  fc.record({ kind: fc.constant('message' as const), conversation }),
  fc.record({ kind: fc.constant('advance' as const), hours: fc.integer({ min: 1, max: 6 }) }),
);

describeEachEngine('lifecycle property: the returning user', (ctx, engine) => {
  it('after the lookback (and the inactive window) their badge is the definition, in a new epoch', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(historyOp, { maxLength: 25 }),
        fc.boolean(),
        fc.array(awayOp, { maxLength: 6 }),
        fc.shuffledSubarray([...USERS], { minLength: 1 }),
        async (history, inactive, away, returning) => {
          const store = ctx().freshStore();
          // The stores' presence and offline index run on real time: the manual clock starts there.
          const { service, clock } = manualService(store, {
            start: Date.now(),
            rules: { lookbackDays: LOOKBACK_DAYS, inactiveDays: INACTIVE_DAYS },
          });
          const model = new Model();
          const postIds = { next: 0 };
          const now = () => clock.now();
          const advance = (ms: number) => clock.advance(ms);
          for (const id of CONVERSATIONS) await service.replaceMembers(id, [PEER]);
          for (const op of history) await apply(op, model, service, now, advance, postIds);
          for (const u of USERS) await service.setPresence(u, false, 60_000);

          advance(
            inactive ? (INACTIVE_DAYS + 1) * DAY_MS + 2 * HOUR_MS : (LOOKBACK_DAYS + 1) * DAY_MS,
          );
          await service.dropInactiveUsers(1000);
          await service.expireOfflineBadges(1000);
          if (inactive) for (const u of USERS) model.forget(u);
          for (const op of away) await apply(op, model, service, now, advance, postIds);

          for (const u of returning) {
            const badge = await service.badge(u, { seen: true });
            model.see(u);
            const context = `${u} back after ${inactive ? 'the inactive window' : 'the lookback'}`;
            const { conversations, ...counts } = model.badge(u, now());
            expect(
              {
                feed: badge.feed,
                notices: badge.notices,
                reddots: [...badge.reddots].sort(),
                conversations: Object.fromEntries(
                  Object.entries(badge.conversations).filter(([, n]) => n > 0),
                ),
              },
              context,
            ).toEqual({ ...counts, conversations });
            expect(badge.version, context).toBe(1);
            expect(model.epochs.get(u)?.has(badge.epoch) ?? false, context).toBe(false);
          }
        },
      ),
      { numRuns: RUNS[engine] },
    );
  }, 120_000);
});
