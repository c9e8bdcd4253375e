/**
 * What the FeedCounter property files (feed-counter*.property.test.ts) share: the stored sources
 * as docs/semantics.md defines them, the definition itself, and the operations both files apply
 * alike to the model and to the counter. The counter sees the sources only as a core does:
 * loads of stored windows and post events.
 */
import { FeedCounter } from '@bubble/core';
import fc from 'fast-check';
import { expect } from 'vitest';

/** The lookback window. */
export const L = 1000;

/** Times on a coarse grid so that posts, cursors and the window edge often coincide. */
export const offset = fc.integer({ min: -20, max: 2 }).map((step) => step * 100);

/** The operations both files define alike; a post without topics is one of the follows-only file. */
export type CommonOp =
  | { op: 'drop'; user: string }
  | { op: 'read'; user: string; at: number }
  | { op: 'post'; author: string; id: string; ts: number; topics?: string[] }
  | { op: 'delete'; author: string; id: string }
  | { op: 'advance'; by: number };

/**
 * The arbitraries of the common operations over the file's users, authors and post ids; posts
 * carry topics when `topics` is given. A post is twice as likely as the others.
 */
export function commonOpArbs(names: {
  user: fc.Arbitrary<string>;
  author: fc.Arbitrary<string>;
  postId: fc.Arbitrary<string>;
  topics?: fc.Arbitrary<string[]>;
}): fc.Arbitrary<CommonOp>[] {
  const { user, author, postId, topics } = names;
  const post = topics
    ? fc.record({ op: fc.constant('post' as const), author, id: postId, ts: offset, topics })
    : fc.record({ op: fc.constant('post' as const), author, id: postId, ts: offset });
  return [
    fc.record({ op: fc.constant('drop' as const), user }),
    fc.record({ op: fc.constant('read' as const), user, at: offset }),
    post,
    post,
    fc.record({ op: fc.constant('delete' as const), author, id: postId }),
    fc.record({
      op: fc.constant('advance' as const),
      by: fc.oneof(
        fc.constantFrom(1, 100),
        fc.integer({ min: 1, max: 30 }).map((s) => s * 100),
      ),
    }),
  ];
}

export interface StoredPost {
  author: string;
  id: string;
  ts: number;
  topics: string[];
}

interface HeldUser {
  follows: Set<string>;
  topics: Set<string>;
  readAt: number | null;
}

export class Model {
  now = 10 * L;
  posts = new Map<string, StoredPost>();
  deleted = new Set<string>();
  held = new Map<string, HeldUser>();

  /** Holds a user with these sources and a cursor `readAt` ms from now (or none). */
  hold(user: string, follows: string[], topics: string[], readAt: number | null): number | null {
    const at = readAt === null ? null : this.now + readAt;
    this.held.set(user, { follows: new Set(follows), topics: new Set(topics), readAt: at });
    return at;
  }

  /** Replaces one source list of a held user; false when the user is not held. */
  replace(user: string, list: 'follows' | 'topics', names: string[]): boolean {
    const held = this.held.get(user);
    if (held) held[list] = new Set(names);
    return held !== undefined;
  }

  /** The definition: each post once, reached through its author or any of its topics. */
  feed(userId: string): number {
    const u = this.held.get(userId)!;
    return this.reaching(userId, Math.max(u.readAt ?? -Infinity, this.now - L), this.now);
  }

  /** Posts reaching the user with after < ts ≤ until, whatever their cursor. */
  reaching(userId: string, after: number, until: number): number {
    const u = this.held.get(userId)!;
    return [...this.posts.values()].filter(
      (p) =>
        (u.follows.has(p.author) || p.topics.some((t) => u.topics.has(t))) &&
        p.ts > after &&
        p.ts <= until,
    ).length;
  }

  live(): StoredPost[] {
    return [...this.posts.values()].filter((p) => p.ts > this.now - L);
  }

  byAuthor(name: string): StoredPost[] {
    return this.live().filter((p) => p.author === name);
  }

  byTopic(name: string): StoredPost[] {
    return this.live().filter((p) => p.topics.includes(name));
  }

  /**
   * Stores a post unless it is stored already, was deleted or is out of the window (a repeated
   * ingest is not stored again, and not logged: the first topics win); true when stored.
   */
  store(author: string, id: string, at: number, topics: string[] = []): boolean {
    const key = `${author}/${id}`;
    if (this.posts.has(key) || this.deleted.has(key) || at <= this.now - L) return false;
    this.posts.set(key, { author, id, ts: at, topics });
    return true;
  }

  /** Deletes a post for good; the post it was, if stored. */
  delete(author: string, id: string): StoredPost | undefined {
    const key = `${author}/${id}`;
    const post = this.posts.get(key);
    this.posts.delete(key);
    this.deleted.add(key);
    return post;
  }
}

/** Applies one of the common operations to the model and to the counter. */
export function applyCommonOp(op: CommonOp, model: Model, counter: FeedCounter): void {
  switch (op.op) {
    case 'drop':
      model.held.delete(op.user);
      counter.removeUser(op.user);
      break;
    case 'read': {
      const held = model.held.get(op.user);
      if (!held) break;
      const at = Math.min(model.now + op.at, model.now);
      held.readAt = Math.max(held.readAt ?? -Infinity, at);
      counter.advanceReadAt(op.user, at);
      break;
    }
    case 'post': {
      const ts = model.now + op.ts;
      if (!model.store(op.author, op.id, ts, op.topics)) break;
      if (op.topics) counter.addPost(op.author, op.id, ts, op.topics);
      else counter.addPost(op.author, op.id, ts);
      break;
    }
    case 'delete': {
      const post = model.delete(op.author, op.id);
      if (post) counter.deletePost(op.author, op.id, post.ts);
      break;
    }
    case 'advance':
      model.now += op.by;
      counter.advanceTo(model.now);
      for (const [key, p] of model.posts) if (p.ts <= model.now - L) model.posts.delete(key);
      break;
  }
}

/**
 * Replays `ops` on a fresh model and counter through `apply`, and after each op expects every
 * held user's count equal to the definition (and whatever `alsoExpect` checks for that user).
 */
export function replay<Op>(
  ops: readonly Op[],
  apply: (op: Op, model: Model, counter: FeedCounter) => void,
  alsoExpect?: (user: string, model: Model, counter: FeedCounter) => void,
): void {
  const model = new Model();
  const counter = new FeedCounter({ lookbackMs: L });
  counter.advanceTo(model.now);
  for (const op of ops) {
    apply(op, model, counter);
    for (const u of model.held.keys()) {
      expect({ user: u, count: counter.countOf(u) }).toEqual({ user: u, count: model.feed(u) });
      alsoExpect?.(u, model, counter);
    }
  }
}
