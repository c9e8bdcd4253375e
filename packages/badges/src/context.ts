import { DAY_MS, type Clock } from '@bubble/protocol';
import type { BubbleStore } from '@bubble/store';
import type { OfflineJobs } from './offline-jobs.js';
import { DEFAULT_RULES, type BadgeRules } from './rules.js';
import type { CounterScope } from './stored-extras.js';

/** What every use case of the badges layer works with: the store, the one clock, the rules. */
export interface BadgeContext {
  readonly store: BubbleStore;
  /** Every "now" of the badges layer comes from here (tests drive it by hand). */
  readonly clock: Clock;
  readonly rules: Readonly<BadgeRules>;
  /** The lookback in ms: posts at or before now − lookbackMs never count. */
  readonly lookbackMs: number;
  /** The interaction counters a badge counts (BUBBLE_COUNTER_KINDS, BUBBLE_INACTIVE_DAYS). */
  readonly counters: CounterScope;
  /** Offline delivery's job queue, when BUBBLE_WEBHOOK_URL is set. */
  readonly offlineJobs?: OfflineJobs | undefined;
}

export function createBadgeContext(
  store: BubbleStore,
  clock: Clock,
  rules: Partial<BadgeRules> = {},
  offlineJobs?: OfflineJobs,
): BadgeContext {
  const resolved = Object.freeze({ ...DEFAULT_RULES, ...rules });
  const counters = Object.freeze({
    kinds: resolved.counterKinds,
    windowMs: resolved.inactiveDays * DAY_MS,
  });
  return {
    store,
    clock,
    rules: resolved,
    lookbackMs: resolved.lookbackDays * DAY_MS,
    counters,
    offlineJobs,
  };
}
