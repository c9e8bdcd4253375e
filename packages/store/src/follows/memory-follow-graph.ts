import { followCapError, type FollowGraph, type FollowOutcome } from './follow-graph.js';

export class MemoryFollowGraph implements FollowGraph {
  private readonly byUser = new Map<string, Set<string>>();

  /** What is followed, for the cap's message: authors or topics. */
  constructor(private readonly noun: string) {}

  async follow(user: string, author: string, cap: number): Promise<FollowOutcome> {
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
    const set = this.byUser.get(user);
    if (!set?.delete(author)) return false;
    if (set.size === 0) this.byUser.delete(user);
    return true;
  }

  async replace(user: string, authors: readonly string[]): Promise<void> {
    if (authors.length === 0) this.byUser.delete(user);
    else this.byUser.set(user, new Set(authors));
  }

  async list(user: string): Promise<string[]> {
    return [...(this.byUser.get(user) ?? [])];
  }

  holds(user: string): boolean {
    return this.byUser.has(user);
  }
}
