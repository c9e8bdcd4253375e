/**
 * The brute-force model of the whole badge (docs/semantics.md) that
 * all-sources.property.test.ts runs against BadgeService, and the two sets of names it runs on.
 */
import type { BadgeState } from '../support/badges.js';

export interface Names {
  users: readonly [string, string, string];
  /** Sends messages without being a member of anything. */
  outsider: string;
  conversations: readonly [string, string];
  reddots: readonly [string, string];
  author: string;
  kinds: readonly [string, string];
  eventIds: readonly [string, string, string];
}

export const ORDINARY: Names = {
  users: ['u0', 'u1', 'u2'],
  outsider: 'x9',
  conversations: ['c1', 'c2'],
  reddots: ['r1', 'r2'],
  author: 'a1',
  kinds: ['mention', 'like'],
  eventIds: ['e1', 'e2', 'e3'],
};

/** Object.prototype's own names, as ids of every kind. */
export const JS_NAMES: Names = {
  users: ['__proto__', 'constructor', 'toString'],
  outsider: 'valueOf',
  conversations: ['hasOwnProperty', '__proto__'],
  reddots: ['hasOwnProperty', 'prototype'],
  author: 'prototype',
  kinds: ['constructor', '__proto__'],
  eventIds: ['toString', '__proto__', 'valueOf'],
};

export const DISPLAY_CAP = 5;

/** The model for one set of names (it lists the counters of `names.kinds`). */
export function modelFor(names: Names) {
  const { kinds: KINDS } = names;

  interface Member {
    readSeq: number;
    muted: boolean;
  }

  interface Conversation {
    maxSeq: number;
    lastTs: number;
    members: Map<string, Member>;
  }

  class Model {
    now: number;
    readonly live = new Set<number>();
    highest = 0;
    readonly seen = new Map<string, number>();
    readonly marked = new Map<string, number>();
    readonly clicks = new Map<string, Map<string, number>>();
    readonly conversations = new Map<string, Conversation>();
    readonly posts: number[] = [];
    readonly readAt = new Map<string, number>();
    readonly last = new Map<string, { epoch: string; version: number; shown: string }>();
    /** `user kind` → ids counted (stored, not retracted, not read) */
    readonly counting = new Map<string, Set<string>>();
    /** `user kind id` of every event ingested or retracted: a later ingest of it is ignored */
    readonly eventsKnown = new Set<string>();

    constructor(now: number) {
      this.now = now;
    }

    see(user: string): void {
      if (!this.seen.has(user)) this.seen.set(user, this.highest);
    }

    badge(user: string): BadgeState {
      const readAt = this.readAt.get(user) ?? -Infinity;
      const feed = this.posts.filter((ts) => ts > readAt && ts <= this.now).length;
      const seen = this.seen.get(user);
      const notices = seen === undefined ? 0 : [...this.live].filter((id) => id > seen).length;
      const conversations: Record<string, number> = Object.create(null) as Record<string, number>;
      let conversationsTotal = 0;
      for (const [id, c] of this.conversations) {
        const member = c.members.get(user);
        if (!member) continue;
        const unread = c.maxSeq - member.readSeq;
        if (unread > 0) conversations[id] = unread;
        if (!member.muted) conversationsTotal += unread;
      }
      const clicks = this.clicks.get(user) ?? new Map<string, number>();
      const reddots = [...this.marked]
        .filter(([name, g]) => {
          const clicked = clicks.get(name);
          return clicked === undefined || clicked < g;
        })
        .map(([name]) => name)
        .sort();
      const counters: Record<string, number> = Object.create(null) as Record<string, number>;
      let countersTotal = 0;
      for (const kind of [...KINDS].sort()) {
        const n = this.counting.get(`${user} ${kind}`)?.size ?? 0;
        if (n > 0) counters[kind] = n;
        countersTotal += n;
      }
      const total = feed + notices + conversationsTotal + countersTotal;
      return {
        feed,
        notices,
        conversations,
        conversationsTotal,
        reddots,
        ...(countersTotal > 0 && { counters }),
        total,
        display: total > DISPLAY_CAP ? `${DISPLAY_CAP}+` : String(total),
      };
    }

    click(user: string, names: Iterable<string>): void {
      let clicks = this.clicks.get(user);
      if (!clicks) this.clicks.set(user, (clicks = new Map()));
      for (const name of names) clicks.set(name, this.now);
    }

    join(id: string, users: readonly string[], replace: boolean): void {
      let c = this.conversations.get(id);
      if (!c) this.conversations.set(id, (c = { maxSeq: 0, lastTs: 0, members: new Map() }));
      if (replace)
        for (const user of [...c.members.keys()]) if (!users.includes(user)) c.members.delete(user);
      for (const user of users)
        if (!c.members.has(user)) c.members.set(user, { readSeq: c.maxSeq, muted: false });
    }

    describe(): string {
      const conversations = [...this.conversations].map(
        ([id, c]) =>
          `${id}(max ${c.maxSeq}: ${[...c.members].map(([u, m]) => `${u}@${m.readSeq}${m.muted ? 'm' : ''}`).join(' ')})`,
      );
      return [
        `notices live [${[...this.live].sort((a, b) => a - b).join(',')}] highest ${this.highest}`,
        `seen ${[...this.seen].map(([u, s]) => `${u}=${s}`).join(' ')}`,
        `reddots ${[...this.marked].map(([n, g]) => `${n}@${g}`).join(' ')}`,
        `clicks ${[...this.clicks].map(([u, m]) => `${u}:${[...m].map(([n, t]) => `${n}@${t}`).join(',')}`).join(' ')}`,
        `conversations ${conversations.join(' ')}`,
        `counters ${[...this.counting].map(([k, ids]) => `${k}:[${[...ids].join(',')}]`).join(' ')}`,
        `posts ${this.posts.join(',')} readAt ${[...this.readAt].map(([u, t]) => `${u}@${t}`).join(' ')} now ${this.now}`,
      ].join('\n');
    }
  }

  return Model;
}

export type Model = InstanceType<ReturnType<typeof modelFor>>;
