import { BubbleError } from '@bubble/protocol';

/** Who or what a user follows: authors, or topics (the same interface, topic names for authors). */

export type FollowOutcome = 'added' | 'exists';

export interface FollowGraph {
  /** Throws UB_ERR_FOLLOW_CAP when `user` already follows `cap` authors. */
  follow(user: string, author: string, cap: number): Promise<FollowOutcome>;
  unfollow(user: string, author: string): Promise<boolean>;
  /** Replaces the whole set atomically. `authors` must be de-duplicated and within the cap. */
  replace(user: string, authors: readonly string[]): Promise<void>;
  list(user: string): Promise<string[]>;
}

/** What follow() throws at the cap, on both engines. `noun`: what is followed (authors, topics). */
export function followCapError(cap: number, noun: string): BubbleError {
  return new BubbleError('UB_ERR_FOLLOW_CAP', `a user may follow at most ${cap} ${noun}`);
}
