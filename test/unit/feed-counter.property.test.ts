import { FeedCounter } from '@bubble/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { L, Model, applyCommonOp, commonOpArbs, offset, replay } from './feed-counter-model.js';
import type { CommonOp } from './feed-counter-model.js';

const USERS = ['u0', 'u1', 'u2', 'u3', 'u4', 'u5'];
const AUTHORS = ['a0', 'a1', 'a2', 'a3', 'a4'];

type Op =
  | CommonOp
  | { op: 'hold'; user: string; follows: string[]; readAt: number | null }
  | { op: 'follows'; user: string; follows: string[] }
  /** A post or delete the counter never hears of, then a reconciliation of that author. */
  | { op: 'missed'; author: string; id: string; ts: number; deleteIt: boolean };

const user = fc.constantFrom(...USERS);
const author = fc.constantFrom(...AUTHORS);
const postId = fc.constantFrom('p0', 'p1', 'p2', 'p3', 'p4', 'p5');
const follows = fc.uniqueArray(author, { maxLength: 4 });

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    op: fc.constant('hold' as const),
    user,
    follows,
    readAt: fc.option(offset, { nil: null }),
  }),
  fc.record({ op: fc.constant('follows' as const), user, follows }),
  fc.record({
    op: fc.constant('missed' as const),
    author,
    id: postId,
    ts: offset,
    deleteIt: fc.boolean(),
  }),
  ...commonOpArbs({ user, author, postId }),
);

function load(counter: FeedCounter, model: Model, authors: string[]): void {
  for (const a of authors) counter.loadAuthor(a, model.byAuthor(a));
}

describe('FeedCounter', () => {
  it('keeps every held user equal to the feed definition', () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 60 }), (ops) =>
        replay(ops, (op, model, counter) => {
          switch (op.op) {
            case 'hold': {
              const readAt = model.hold(op.user, op.follows, [], op.readAt);
              load(counter, model, counter.setUser(op.user, op.follows, readAt));
              counter.recompute(op.user);
              break;
            }
            case 'follows': {
              if (!model.replace(op.user, 'follows', op.follows)) break;
              load(counter, model, counter.setFollows(op.user, op.follows));
              for (const u of model.held.keys()) counter.recompute(u);
              break;
            }
            case 'missed':
              if (op.deleteIt) model.delete(op.author, op.id);
              else model.store(op.author, op.id, model.now + op.ts);
              counter.reloadAuthor(op.author, model.byAuthor(op.author));
              break;
            default:
              applyCommonOp(op, model, counter);
          }
        }),
      ),
      { numRuns: 500 },
    );
  });

  it('hands out each changed count once', () => {
    const counter = new FeedCounter({ lookbackMs: L });
    counter.advanceTo(5000);
    counter.setUser('u0', ['a0'], null);
    counter.setUser('u1', ['a1'], null);
    counter.loadAuthor('a0', []);
    counter.loadAuthor('a1', []);
    const first = counter.takeChanged();
    expect(Array.from(first.ids, (id) => counter.nameAt(id)).sort()).toEqual(['u0', 'u1']);
    counter.addPost('a0', 'p1', 4990);
    counter.addPost('a0', 'p2', 4995);
    const second = counter.takeChanged();
    expect(Array.from(second.ids, (id) => counter.nameAt(id))).toEqual(['u0']);
    expect(Array.from(second.counts)).toEqual([2]);
    expect(counter.takeChanged().ids.length).toBe(0);
  });

  it('removing followers from the middle of a list keeps every other follower counted', () => {
    const counter = new FeedCounter({ lookbackMs: L });
    counter.advanceTo(5000);
    const users = ['u0', 'u1', 'u2', 'u3', 'u4'];
    // Each follows a0 and a1 in a different order, so their positions differ per author.
    users.forEach((user, i) => counter.setUser(user, i % 2 ? ['a0', 'a1'] : ['a1', 'a0'], null));
    counter.loadAuthor('a0', []);
    counter.loadAuthor('a1', []);
    // Each removal moves the last follower into the removed one's place; the next removal of
    // that moved follower must find it there.
    counter.removeUser('u0');
    counter.removeUser('u4');
    counter.setFollows('u2', ['a1']);
    counter.removeUser('u1');
    counter.addPost('a0', 'p1', 4990);
    counter.addPost('a1', 'p2', 4991);
    expect(counter.countOf('u2')).toBe(1);
    expect(counter.countOf('u3')).toBe(2);
    counter.setUser('u0', ['a0'], null);
    counter.recompute('u0');
    counter.addPost('a0', 'p3', 4992);
    expect([counter.countOf('u0'), counter.countOf('u2'), counter.countOf('u3')]).toEqual([
      2, 1, 3,
    ]);
  });
  it('follow sets replaced many times (the arena compacts and grows) keep every count exact', () => {
    const counter = new FeedCounter({ lookbackMs: L });
    counter.advanceTo(5000);
    const authors = Array.from({ length: 300 }, (_, a) => `a${a}`);
    const users = Array.from({ length: 60 }, (_, u) => `u${u}`);
    const posted = new Set<number>();
    const postsOf = (name: string) => {
      const a = Number(name.slice(1));
      return [{ id: `p${a}`, ts: 4200 }, ...(posted.has(a) ? [{ id: `q${a}`, ts: 4500 }] : [])];
    };
    const load = (names: string[]) => names.forEach((a) => counter.loadAuthor(a, postsOf(a)));
    const followsOf = (u: number, round: number) =>
      authors.filter((_, a) => (a * 7 + u * 13 + round * 31) % 5 < 2 + ((u + round) % 3));
    // Each round replaces every set (leaving the old ranges as garbage) and drops some users.
    for (let round = 0; round <= 8; round++) {
      users.forEach((user, u) => {
        if ((u + round) % 7 === 0) counter.removeUser(user);
        else if (counter.hasUser(user)) load(counter.setFollows(user, followsOf(u, round)));
        else load(counter.setUser(user, followsOf(u, round), null));
        if (counter.hasUser(user)) counter.recompute(user);
      });
      posted.add(round * 11);
      counter.addPost(`a${round * 11}`, `q${round * 11}`, 4500);
      users.forEach((user, u) => {
        if (!counter.hasUser(user)) return;
        const follows = followsOf(u, round);
        const expected =
          follows.length + follows.filter((a) => posted.has(Number(a.slice(1)))).length;
        expect(counter.followsOf(user).sort()).toEqual([...follows].sort());
        expect([user, counter.countOf(user)]).toEqual([user, expected]);
      });
    }
  });

  it('after random mass removals (a gateway dying) every held user equals the definition', () => {
    const users = Array.from({ length: 40 }, (_, u) => `u${u}`);
    const authors = Array.from({ length: 8 }, (_, a) => `a${a}`);
    interface Profile {
      follows: string[];
      topics: string[];
      readAt: number | null;
    }
    const profile: fc.Arbitrary<Profile> = fc.record({
      follows: fc.uniqueArray(fc.constantFrom(...authors), { maxLength: 6 }),
      topics: fc.uniqueArray(fc.constantFrom('t0', 't1', 't2'), { maxLength: 2 }),
      readAt: fc.option(fc.integer({ min: 9400, max: 9900 }), { nil: null }),
    });
    type MassStep =
      | { kind: 'offline'; gone: string[]; deferred: boolean }
      | { kind: 'reclaim'; budget: number }
      | { kind: 'online'; back: [string, Profile][] }
      | { kind: 'post'; author: string };
    const step: fc.Arbitrary<MassStep> = fc.oneof(
      // Users let go at once: a random subset of everyone, as a dying gateway's share.
      fc.record({
        kind: fc.constant('offline' as const),
        gone: fc.uniqueArray(fc.constantFrom(...users), { minLength: 1, maxLength: 40 }),
        // As a sweep lets them go (releaseUser, reclaimed later), or removeUser at once.
        deferred: fc.boolean(),
      }),
      fc.record({ kind: fc.constant('reclaim' as const), budget: fc.integer({ min: 0, max: 60 }) }),
      fc.record({
        kind: fc.constant('online' as const),
        back: fc.array(fc.tuple(fc.constantFrom(...users), profile), { maxLength: 20 }),
      }),
      fc.record({ kind: fc.constant('post' as const), author: fc.constantFrom(...authors) }),
    );
    const now = 10_000;
    const run = (initial: Profile[], steps: MassStep[]) => {
      const counter = new FeedCounter({ lookbackMs: L });
      counter.advanceTo(now);
      const live = authors.flatMap((a, i) => [
        { author: a, id: `p${i}`, ts: 9500 + i, topics: i % 3 === 0 ? [`t${i % 2}`] : [] },
        { author: a, id: `q${i}`, ts: 9800 + i, topics: i % 4 === 1 ? ['t2', 't1'] : [] },
      ]);
      const held = new Map<string, Profile>();
      const hold = (user: string, p: Profile) => {
        held.set(user, p);
        for (const a of counter.setUser(user, p.follows, p.readAt)) {
          counter.loadAuthor(
            a,
            live.filter((x) => x.author === a),
          );
        }
        for (const t of counter.setTopics(user, p.topics)) {
          counter.loadTopic(
            t,
            live.filter((x) => x.topics.includes(t)),
          );
        }
        counter.recompute(user);
      };
      users.forEach((user, u) => hold(user, initial[u]!));
      for (const s of steps) {
        if (s.kind === 'offline') {
          for (const user of s.gone) {
            held.delete(user);
            if (s.deferred) counter.releaseUser(user);
            else counter.removeUser(user);
          }
        } else if (s.kind === 'reclaim') {
          counter.reclaim(s.budget);
        } else if (s.kind === 'online') {
          for (const [user, p] of s.back) hold(user, p);
        } else {
          const n = live.length;
          const post = {
            author: s.author,
            id: `n${n}`,
            ts: now - 50 + n,
            topics: n % 2 ? ['t1'] : [],
          };
          live.push(post);
          counter.addPost(post.author, post.id, post.ts, post.topics);
        }
        const wrong: unknown[] = [];
        for (const user of users) {
          const p = held.get(user);
          if (!p) {
            if (counter.hasUser(user)) wrong.push([user, 'still held']);
            continue;
          }
          const after = Math.max(p.readAt ?? -Infinity, now - L);
          const expected = live.filter(
            (x) =>
              (p.follows.includes(x.author) || x.topics.some((t) => p.topics.includes(t))) &&
              x.ts > after &&
              x.ts <= now,
          ).length;
          if (counter.countOf(user) !== expected)
            wrong.push([user, counter.countOf(user), expected]);
        }
        expect(wrong).toEqual([]);
        expect(counter.heldUsers().sort()).toEqual([...held.keys()].sort());
        expect(counter.userCount).toBe(held.size);
      }
      counter.reclaim(Infinity);
      expect(counter.unreclaimedFollows).toBe(0);
      for (const [user, p] of held) {
        const after = Math.max(p.readAt ?? -Infinity, now - L);
        counter.recompute(user);
        const reaching = live.filter(
          (x) =>
            (p.follows.includes(x.author) || x.topics.some((t) => p.topics.includes(t))) &&
            x.ts > after &&
            x.ts <= now,
        ).length;
        expect([user, counter.countOf(user)]).toEqual([user, reaching]);
      }
    };
    fc.assert(
      fc.property(
        fc.array(profile, { minLength: 40, maxLength: 40 }),
        fc.array(step, { maxLength: 12 }),
        run,
      ),
      { numRuns: 150 },
    );
  }, 60_000);
});
