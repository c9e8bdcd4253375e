import { BubbleError } from '@bubble/protocol';

/** Who or what a user follows: authors, or topics (the same interface, topic names for authors). */

/**
 * `added` and `exists` for a user whose sources are held. With a sources endpoint
 * (sourcesOnDemand), `recorded` while a fetch of a user's sources is in flight (applied on top
 * of the answer, docs/semantics.md "Where a user's sources live"), `not-held` when the user's
 * sources are not held and no fetch is: nothing was stored.
 */
export type FollowOutcome = 'added' | 'exists' | 'recorded' | 'not-held';

export interface FollowGraph {
  /**
   * Throws UB_ERR_FOLLOW_CAP when `user` already follows `cap` authors, or while a fetch is in
   * flight when the changes recorded for it already name 2 × `cap` authors.
   */
  follow(user: string, author: string, cap: number): Promise<FollowOutcome>;
  /**
   * Whether anything was removed, or recorded to be during a fetch in flight (at most
   * RECORDED_UNFOLLOWS_LIMIT ids recorded, past it UB_ERR_FOLLOW_CAP); false for a user whose
   * sources are not held.
   */
  unfollow(user: string, author: string): Promise<boolean>;
  /**
   * Replaces the whole set atomically. `authors` must be de-duplicated and within the cap.
   * Returns whether it was stored or recorded (false: the user's sources are not held).
   */
  replace(user: string, authors: readonly string[]): Promise<boolean>;
  list(user: string): Promise<string[]>;
}

/** What follow() throws at the cap, on both engines. `noun`: what is followed (authors, topics). */
export function followCapError(cap: number, noun: string): BubbleError {
  return new BubbleError('UB_ERR_FOLLOW_CAP', `a user may follow at most ${cap} ${noun}`);
}

/**
 * Most ids of one kind an unfollow records during a fetch (a follow records up to 2 × its cap):
 * the fetch marker stays bounded whatever a platform sends while it waits.
 */
export const RECORDED_UNFOLLOWS_LIMIT = 4000;

/** What a follow change throws when the fetch marker records as many ids of its kind as it may. */
export function recordedChangesError(limit: number, noun: string): BubbleError {
  return new BubbleError(
    'UB_ERR_FOLLOW_CAP',
    `at most ${limit} ${noun} may change while the user's follows are being fetched`,
  );
}
