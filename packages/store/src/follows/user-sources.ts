import type { SourcesAnswer } from '@bubble/protocol';
import type { FeedInputs } from '../bubble-store/bubble-store.js';

/**
 * Whether bubble holds a user's sources (follows and topic follows), and their installation
 * from the platform's answer (docs/semantics.md, "Where a user's sources live").
 *
 * Without a sources endpoint (`onDemand` false) every user's sources are held: a follow change
 * always stores, as before. With one, a user's sources are held from the install of an answer
 * until the lifecycle job drops them (or the store loses its data); a follow change for a user
 * not held stores nothing, unless a fetch is in flight (beginFetch until install), in which
 * case it is recorded and applied on top of the answer.
 */
export interface UserSources {
  readonly onDemand: boolean;
  /** Whether each user's sources are held, in input order (all true when not on demand). */
  held(users: readonly string[]): Promise<boolean[]>;
  /**
   * Marks a fetch of each user's sources as in flight for `ttlMs`: until install (or the ttl),
   * follow changes of a user not held are recorded, bounded, instead of dropped.
   */
  beginFetch(users: readonly string[], ttlMs: number): Promise<void>;
  /**
   * For each entry whose user is not held yet: stores the answer's follows and topics with the
   * changes recorded since beginFetch applied on top (the caps applied as follow() does), sets
   * the feed cursor from `readAt` and the notice cursor from `noticesSeen` where the user has
   * none, and ends the in-flight mark. A user already held keeps what it holds (another install
   * won; changes since went to it). Returns each user's feed inputs after it, in input order.
   */
  install(
    entries: readonly { user: string; answer: SourcesAnswer }[],
    caps: { follows: number; topics: number },
  ): Promise<FeedInputs[]>;
}
