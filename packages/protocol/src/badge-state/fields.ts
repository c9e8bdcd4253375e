import type { BadgeCounts } from '../badge.js';
import { idRecord, ownValue } from '../ids.js';

/**
 * A badge state is stored as flat integer fields (docs/redis-keys.md), only non-zero ones:
 *   f feed · n notices · c:<id> unread of a conversation · m:<id> the same, muted ·
 *   r:<name> 1 for a red dot shown · k:<kind> an interaction counter
 * Two states with equal fields are the same badge, so the version moves exactly when one does.
 */
export const FEED_FIELD = 'f';
export const NOTICES_FIELD = 'n';
const CONVERSATION = 'c:';
const MUTED = 'm:';
const REDDOT = 'r:';
const COUNTER = 'k:';

/** The counts a badge state is compared on. Zero counts are not stored. */
export type BadgeFields = Readonly<Record<string, number>>;

/** Everything in a badge beside the feed, as computed from its sources. */
export interface ExtraCounts {
  notices: number;
  /** conversation → unread (non-zero only) and whether it is muted */
  conversations: Array<{ id: string; unread: number; muted: boolean }>;
  /** red dots shown, any order */
  reddots: string[];
  /** interaction counters: kind → count (zero ones may be present) */
  counters: Readonly<Record<string, number>>;
}

export function encodeFields(feed: number, extras: Readonly<ExtraCounts>): Record<string, number> {
  const fields = idRecord<number>();
  if (feed > 0) fields[FEED_FIELD] = feed;
  addExtraFields(fields, extras);
  return fields;
}

export function addExtraFields(
  fields: Record<string, number>,
  extras: Readonly<ExtraCounts>,
): void {
  if (extras.notices > 0) fields[NOTICES_FIELD] = extras.notices;
  for (const { id, unread, muted } of extras.conversations) {
    if (unread > 0) fields[(muted ? MUTED : CONVERSATION) + id] = unread;
  }
  for (const name of extras.reddots) fields[REDDOT + name] = 1;
  for (const kind of Object.keys(extras.counters)) {
    const count = extras.counters[kind]!;
    if (count > 0) fields[COUNTER + kind] = count;
  }
}

/** The fields beside the feed, as stored: what a core compares its extras against. */
export function extraFieldsOf(fields: BadgeFields): Record<string, number> {
  const out = idRecord<number>();
  for (const name of Object.keys(fields)) if (name !== FEED_FIELD) out[name] = fields[name]!;
  return out;
}

export function decodeFields(fields: BadgeFields): BadgeCounts {
  const conversations = idRecord<number>();
  const reddots: string[] = [];
  const counters = idRecord<number>();
  let conversationsTotal = 0;
  for (const name of Object.keys(fields)) {
    const value = fields[name]!;
    if (name.startsWith(CONVERSATION)) {
      conversations[name.slice(CONVERSATION.length)] = value;
      conversationsTotal += value;
    } else if (name.startsWith(MUTED)) {
      conversations[name.slice(MUTED.length)] = value;
    } else if (name.startsWith(REDDOT)) {
      reddots.push(name.slice(REDDOT.length));
    } else if (name.startsWith(COUNTER)) {
      counters[name.slice(COUNTER.length)] = value;
    }
  }
  reddots.sort();
  return {
    feed: ownValue(fields, FEED_FIELD) ?? 0,
    notices: ownValue(fields, NOTICES_FIELD) ?? 0,
    conversations: sortKeys(conversations),
    conversationsTotal,
    reddots,
    counters: sortKeys(counters),
  };
}

function sortKeys(record: Record<string, number>): Record<string, number> {
  const out = idRecord<number>();
  for (const key of Object.keys(record).sort()) out[key] = record[key]!;
  return out;
}
