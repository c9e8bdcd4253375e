/**
 * The numbers the scripts answer for a call or for each item of it, named. Each script's header
 * (packages/store/lua) says which of them it answers and what they mean there.
 */
export const ScriptStatus = {
  /**
   * Refused, or nothing to act on: the follow cap is reached, a post is outside the lookback or
   * deleted, a conversation does not exist, a job is another consumer's, a fence is stale, a
   * user was never seen, a user has no counter state.
   */
  Refused: -1,
  /** Nothing changed: it was there already (a duplicate, a renewal). */
  Unchanged: 0,
  /** Done now. */
  Done: 1,
  /** Done by an earlier call whose event is not logged yet: the caller appends it (ingestPosts-4). */
  DoneUnlogged: 2,
} as const;

export type ScriptStatus = (typeof ScriptStatus)[keyof typeof ScriptStatus];
