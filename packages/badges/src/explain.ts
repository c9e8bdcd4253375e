import {
  assertId,
  decodeFields,
  displayTotal,
  feedWindowStart,
  idRecord,
  type BadgeCounts,
  type StoredBadge,
} from '@bubble/protocol';
import { shownReddots } from './source-counts.js';
import type { BadgeContext } from './context.js';
import type { Rehydration } from './rehydration.js';
import { sortedByActivity } from './conversations.js';

export interface BadgeExplanation {
  user: string;
  now: number;
  feed: {
    readAt: number | null;
    /** Posts after this ts count: max(readAt, now − lookback). */
    countsAfter: number;
    lookbackDays: number;
    /**
     * Where the follows came from: `held` in the store, `stale` when the platform's endpoint
     * could not give them (the feed counts 0 then).
     */
    sources: 'held' | 'stale';
    follows: number;
    /** The topics the user follows, sorted. */
    topics: string[];
    /** The feed's split: posts by followed authors, and posts reaching the user by topics only. */
    byAuthors: number;
    byTopicsOnly: number;
    contribution: number;
  };
  notices: { seen: number | null; highestPublished: number; contribution: number };
  conversations: {
    list: Array<{
      id: string;
      maxSeq: number;
      readSeq: number;
      unread: number;
      muted: boolean;
      counted: boolean;
    }>;
    contribution: number;
  };
  reddots: {
    list: Array<{ name: string; markedAt: number; clickedAt: number | null; shown: boolean }>;
    counted: false;
  };
  /** Interaction counters: every configured kind's count (BUBBLE_COUNTER_KINDS). */
  counters: { kinds: Record<string, number>; contribution: number };
  total: number;
  display: string;
  /** The badge state last stored (what pushes and polls serve), for comparison. */
  stored: { epoch: string; version: number; computedAt: number; badge: BadgeCounts } | null;
}

/** Why a badge shows what it shows: every cursor and each source's contribution, as of now. */
export class Explainer {
  constructor(
    private readonly ctx: BadgeContext,
    private readonly rehydration: Rehydration,
  ) {}

  /** The cursors and per-source contributions behind the user's badge, as of now. */
  async explain(user: string): Promise<BadgeExplanation> {
    assertId(user, 'user');
    const { store, rules } = this.ctx;
    const now = this.ctx.clock.now();
    const [sources, marks, memberships, marked, highest, stored, counted] = await Promise.all([
      this.rehydration.feedInputs(user),
      store.marks.state(user),
      store.conversations.memberships(user),
      store.reddots.all(),
      store.notices.highestId(),
      store.badges.load(user),
      store.counters.counts(user, this.ctx.counters.kinds, this.ctx.counters.windowMs),
    ]);
    const { inputs, stale } = sources;
    const from = feedWindowStart(inputs.readAt, now, this.ctx.lookbackMs);
    const [byAuthors, feed, notices] = await Promise.all([
      store.posts.countBetween(inputs.follows, from, now),
      store.posts.countBetween(inputs.follows, from, now, inputs.topics),
      marks.seen === null ? 0 : store.notices.countAfter(marks.seen),
    ]);
    const conversations = sortedByActivity(memberships).map((m) => ({
      id: m.conversation,
      maxSeq: m.maxSeq,
      readSeq: m.readSeq,
      unread: Math.max(0, m.maxSeq - m.readSeq),
      muted: m.muted,
      counted: !m.muted,
    }));
    const shown = new Set(shownReddots(marked, marks.clicks));
    const reddots = Object.keys(marked)
      .sort()
      .map((name) => ({
        name,
        markedAt: marked[name]!,
        clickedAt: marks.clicks[name] ?? null,
        shown: shown.has(name),
      }));
    const conversationsTotal = conversations.reduce((sum, c) => sum + (c.muted ? 0 : c.unread), 0);
    const kinds = idRecord<number>();
    let countersTotal = 0;
    for (const kind of this.ctx.counters.kinds) {
      kinds[kind] = counted.counts[kind] ?? 0;
      countersTotal += kinds[kind];
    }
    const total = feed + notices + conversationsTotal + countersTotal;
    return {
      user,
      now,
      feed: {
        readAt: inputs.readAt,
        countsAfter: from,
        lookbackDays: rules.lookbackDays,
        sources: stale ? 'stale' : 'held',
        follows: inputs.follows.length,
        topics: [...inputs.topics].sort(),
        byAuthors,
        byTopicsOnly: feed - byAuthors,
        contribution: feed,
      },
      notices: {
        seen: marks.seen,
        highestPublished: highest,
        contribution: notices,
      },
      conversations: { list: conversations, contribution: conversationsTotal },
      reddots: { list: reddots, counted: false },
      counters: { kinds, contribution: countersTotal },
      total,
      display: displayTotal(total, rules.displayCap),
      stored: stored ? storedSummary(stored) : null,
    };
  }
}

function storedSummary(stored: StoredBadge) {
  return {
    epoch: stored.epoch,
    version: stored.version,
    computedAt: stored.computedAt,
    badge: decodeFields(stored.fields),
  };
}
