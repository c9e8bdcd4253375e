import {
  followCapError,
  RECORDED_UNFOLLOWS_LIMIT,
  recordedChangesError,
  type FollowGraph,
  type FollowOutcome,
} from './follow-graph.js';
import type { MemorySourcesBook, MemorySourcesFetch } from './memory-sources-book.js';
import type { FollowKind } from './recorded-follows.js';

/** One kind of a user's follows (authors or topics) in the memory engine's book. */
export class MemoryFollowGraph implements FollowGraph {
  private readonly byUser: Map<string, Set<string>>;

  constructor(
    private readonly book: MemorySourcesBook,
    private readonly kind: FollowKind,
    /** What is followed, for the cap's message: authors or topics. */
    private readonly noun: string,
  ) {
    this.byUser = book.lists[kind];
  }

  async follow(user: string, author: string, cap: number): Promise<FollowOutcome> {
    const fetch = this.whereChangesGo(user);
    if (fetch === 'not-held') return 'not-held';
    if (fetch) {
      if (!fetch.record(this.kind, author, true, 2 * cap)) {
        throw recordedChangesError(2 * cap, this.noun);
      }
      return 'recorded';
    }
    let set = this.byUser.get(user);
    if (set?.has(author)) return 'exists';
    if ((set?.size ?? 0) >= cap) {
      throw followCapError(cap, this.noun);
    }
    if (!set) this.byUser.set(user, (set = new Set()));
    set.add(author);
    return 'added';
  }

  async unfollow(user: string, author: string): Promise<boolean> {
    const fetch = this.whereChangesGo(user);
    if (fetch === 'not-held') return false;
    if (fetch) {
      if (!fetch.record(this.kind, author, false, RECORDED_UNFOLLOWS_LIMIT)) {
        throw recordedChangesError(RECORDED_UNFOLLOWS_LIMIT, this.noun);
      }
      return true;
    }
    const set = this.byUser.get(user);
    if (!set?.delete(author)) return false;
    if (set.size === 0 && !this.keepsEmpty()) this.byUser.delete(user);
    return true;
  }

  async replace(user: string, authors: readonly string[]): Promise<boolean> {
    const fetch = this.whereChangesGo(user);
    if (fetch === 'not-held') return false;
    if (fetch) fetch.recordReplace(this.kind, authors);
    else if (authors.length === 0 && !this.keepsEmpty()) this.byUser.delete(user);
    else this.byUser.set(user, new Set(authors));
    return true;
  }

  async list(user: string): Promise<string[]> {
    return [...(this.byUser.get(user) ?? [])];
  }

  /** Null for a held user (the change is stored), their fetch in flight, or 'not-held'. */
  private whereChangesGo(user: string): MemorySourcesFetch | 'not-held' | null {
    if (this.book.held(user)) return null;
    return this.book.fetchOf(user) ?? 'not-held';
  }

  /** On demand an empty authors list stays: it says the user's sources are held. */
  private keepsEmpty(): boolean {
    return this.book.onDemand && this.kind === 'a';
  }
}
