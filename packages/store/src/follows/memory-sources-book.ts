import type { FollowKind, RecordedFollows } from './recorded-follows.js';

/** A fetch of one user's sources in flight (the Redis engine's fetch marker), on the store clock. */
export class MemorySourcesFetch {
  private seq = 0;
  readonly kinds: Record<FollowKind, RecordedFollows> = {
    a: { replaced: false, changes: new Map() },
    t: { replaced: false, changes: new Map() },
  };

  constructor(public expiresAt: number) {}

  /** False when `limit` ids of the kind are recorded already and `id` is not one of them. */
  record(kind: FollowKind, id: string, add: boolean, limit: number): boolean {
    const { changes } = this.kinds[kind];
    if (!changes.has(id) && changes.size >= limit) return false;
    changes.set(id, add ? ++this.seq : -++this.seq);
    return true;
  }

  /** A replace forgets the kind's earlier changes and records its whole list as additions. */
  recordReplace(kind: FollowKind, ids: readonly string[]): void {
    const recorded = this.kinds[kind];
    recorded.replaced = true;
    recorded.changes = new Map(ids.map((id) => [id, ++this.seq]));
  }
}

/**
 * The memory engine's follow lists of every user and the fetches of them in flight: what the
 * authors graph, the topics graph and UserSources share, as the Redis engine's scripts share the
 * user's keys. With `onDemand`, a user's sources are held while their authors list exists (an
 * empty one included); without, always.
 */
export class MemorySourcesBook {
  readonly lists: Record<FollowKind, Map<string, Set<string>>> = { a: new Map(), t: new Map() };
  private readonly fetches = new Map<string, MemorySourcesFetch>();

  constructor(
    readonly onDemand: boolean,
    readonly now: () => number,
  ) {}

  held(user: string): boolean {
    return !this.onDemand || this.lists.a.has(user);
  }

  /** The user's fetch in flight, or undefined (an expired one is forgotten here). */
  fetchOf(user: string): MemorySourcesFetch | undefined {
    const fetch = this.fetches.get(user);
    if (fetch && fetch.expiresAt <= this.now()) {
      this.fetches.delete(user);
      return undefined;
    }
    return fetch;
  }

  /** As beginFetch-2.lua: a marker for at least `ttlMs` unless held; one there keeps its changes. */
  beginFetch(user: string, ttlMs: number): void {
    if (this.held(user)) return;
    const expiresAt = this.now() + ttlMs;
    const fetch = this.fetchOf(user);
    if (fetch) fetch.expiresAt = Math.max(fetch.expiresAt, expiresAt);
    else this.fetches.set(user, new MemorySourcesFetch(expiresAt));
  }

  endFetch(user: string): void {
    this.fetches.delete(user);
  }

  /** The lifecycle drop with a sources endpoint: the lists and any fetch go. */
  forget(user: string): void {
    this.lists.a.delete(user);
    this.lists.t.delete(user);
    this.fetches.delete(user);
  }

  /** What of the user this holds (MemoryStore.heldFor): 'follows', 'topics', 'fetch'. */
  holds(user: string): string[] {
    const held: string[] = [];
    if (this.lists.a.has(user)) held.push('follows');
    if (this.lists.t.has(user)) held.push('topics');
    if (this.fetchOf(user)) held.push('fetch');
    return held;
  }
}
