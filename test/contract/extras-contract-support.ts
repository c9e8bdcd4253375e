/**
 * What the contract files of the sources beside the feed (extras-contract-*.test.ts) share:
 * the inactive job's now, sorting helpers and a counting highestNoticeId callback.
 */
import { DAY_MS } from '@bubble/protocol';
import type { BubbleStore, ConversationMessage, Membership, MembershipChange } from '@bubble/store';
import { T0 } from '../support/engines.js';

/** The inactive job's now: only users online through presence are seen at it. */
export const JOB_NOW = T0 + 1000 * DAY_MS;

export const sorted = (values: readonly string[]): string[] => [...values].sort();

export function change(c: MembershipChange): MembershipChange {
  return { added: sorted(c.added), removed: sorted(c.removed) };
}

export function byConversation<T extends { conversation: string }>(list: readonly T[]): T[] {
  return [...list].sort((a, b) => (a.conversation < b.conversation ? -1 : 1));
}

export async function membershipOf(
  store: BubbleStore,
  user: string,
  conversation: string,
): Promise<Membership | undefined> {
  return (await store.conversations.memberships(user)).find((m) => m.conversation === conversation);
}

export const msg = (
  seq: number,
  from: string,
  ts = T0 + seq,
  preview?: Record<string, unknown>,
): ConversationMessage => ({ seq, from, ts, preview });

/** A highestNoticeId callback that counts its calls. */
export function highestOf(store: BubbleStore): { calls: number; read: () => Promise<number> } {
  const probe = {
    calls: 0,
    read: async () => {
      probe.calls++;
      return store.notices.highestId();
    },
  };
  return probe;
}
