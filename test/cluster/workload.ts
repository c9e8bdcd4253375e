/**
 * A random feed workload driven over HTTP against a running cluster, and the brute-force model
 * of docs/semantics.md "Feed bubble" it is checked against (the model of
 * test/property/feed-bubble.property.test.ts, on the real clock):
 *
 *   feed(u, T) = #{ p : author(p) ∈ Follows(u), max(readAt(u), T − L) < ts(p) ≤ T, p not deleted }
 *
 * Operations run in a few concurrent lanes. Lane i alone touches the follows, cursor and
 * presence of users i, i+lanes, … and the posts of authors i, i+lanes, …; the final state is a
 * function of the sets and cursors, so the lanes commute and the model stays exact.
 *
 * A read without `upTo` sets readAt to the server's now, known only up to the request's round
 * trip [sent, answered]; no post is ever given a ts inside such an interval, so every count is
 * still determined (the model uses the interval's end).
 */
import { DAY_MS, poolOf } from '@bubble/protocol';
import { waitFor, type RoleProcess } from '@bubble/test-utils';
import { feedCount, LOOKBACK_MS } from '../support/feed-definition.js';
import type { Cluster } from './harness.js';

const L = LOOKBACK_MS;
const ONLINE_TTL_MS = 3_600_000;

export class FeedModel {
  readonly follows = new Map<string, Set<string>>();
  /** `author/id` → the first accepted post. */
  readonly posts = new Map<string, { author: string; ts: number }>();
  /** Deleted `author/id`s, known or not: a deleted post never counts again. */
  readonly deleted = new Set<string>();
  readonly readAt = new Map<string, number>();
  readonly online = new Set<string>();
  /** [sent, answered] of reads without upTo; answered = Infinity while in flight. */
  readonly readWindows: Array<{ lo: number; hi: number }> = [];

  feed(user: string, T = Date.now()): number {
    const follows = this.follows.get(user) ?? new Set<string>();
    return feedCount(this.posts, this.deleted, follows, this.readAt.get(user), T);
  }

  /** Whether a post ts would fall into the uncertainty of a read without upTo. */
  ambiguous(ts: number): boolean {
    return this.readWindows.some(({ lo, hi }) => ts >= lo - 1 && ts <= hi + 1);
  }

  advanceRead(user: string, to: number): void {
    this.readAt.set(user, Math.max(this.readAt.get(user) ?? -Infinity, to));
  }
}

export interface WorkloadOptions {
  users: string[];
  authors: string[];
  rand: () => number;
  lanes?: number;
  /**
   * Include end-user reads (POST /v1/badge/read), default true. The crash tests leave them out
   * to test failover alone: a read makes the gateway write the badge hash too (see the
   * gateway-write test in random-workload.test.ts).
   */
  clientReads?: boolean;
}

export class FeedWorkload {
  readonly model = new FeedModel();
  /** When the last write of the workload was answered. */
  lastWriteAt = 0;
  readonly ops = new Map<string, number>();
  private postSeq = 0;
  private readonly lanes: number;

  constructor(
    private readonly cluster: Cluster,
    private readonly options: WorkloadOptions,
  ) {
    this.lanes = options.lanes ?? 4;
  }

  get users(): string[] {
    return this.options.users;
  }

  /** The users online now whose pool is one of `pools`. */
  onlineIn(pools: readonly number[]): string[] {
    return [...this.model.online].filter((u) => pools.includes(poolOf(u, this.cluster.pools)));
  }

  /** The authors any of `users` follows. */
  authorsFollowedBy(users: readonly string[]): string[] {
    return [...new Set(users.flatMap((u) => [...(this.model.follows.get(u) ?? [])]))];
  }

  private pick<T>(list: readonly T[]): T {
    return list[Math.floor(this.options.rand() * list.length)]!;
  }

  private chance(p: number): boolean {
    return this.options.rand() < p;
  }

  private count(op: string): void {
    this.ops.set(op, (this.ops.get(op) ?? 0) + 1);
  }

  private done(): void {
    this.lastWriteAt = Math.max(this.lastWriteAt, Date.now());
  }

  /** Every user follows a few authors; `onlineShare` of them are marked online. */
  async setup(onlineShare: number): Promise<void> {
    await Promise.all(
      this.users.map(async (user) => {
        const authors = this.sample(this.options.authors, 2 + Math.floor(this.options.rand() * 6));
        await this.replaceFollows(user, authors);
        if (this.chance(onlineShare)) await this.setOnline(user, true);
      }),
    );
  }

  /** A random ts in the window, clear of every read-without-upTo window. */
  private postTs(): number {
    for (;;) {
      const r = this.options.rand();
      // Mostly recent; some late (days old); all inside the lookback with a day to spare.
      const age = r < 0.6 ? 1_000 + r * 600_000 : 1_000 + r * 5 * DAY_MS;
      const ts = Math.floor(Date.now() - age);
      if (!this.model.ambiguous(ts)) return ts;
    }
  }

  private sample<T>(list: readonly T[], n: number): T[] {
    const copy = [...list];
    const out: T[] = [];
    while (out.length < n && copy.length > 0) {
      out.push(copy.splice(Math.floor(this.options.rand() * copy.length), 1)[0]!);
    }
    return out;
  }

  // ----------------------------------------------------------------------------- operations

  async replaceFollows(user: string, authors: string[]): Promise<void> {
    await this.cluster.platformOk('PUT', `/v1/users/${user}/follows`, { authors }, 204);
    this.model.follows.set(user, new Set(authors));
    this.count('replace follows');
    this.done();
  }

  async follow(user: string, author: string): Promise<void> {
    await this.cluster.platformOk('PUT', `/v1/users/${user}/follows/${author}`, undefined, 204);
    const set = this.model.follows.get(user) ?? new Set<string>();
    set.add(author);
    this.model.follows.set(user, set);
    this.count('follow');
    this.done();
  }

  async unfollow(user: string, author: string): Promise<void> {
    await this.cluster.platformOk('DELETE', `/v1/users/${user}/follows/${author}`, undefined, 204);
    this.model.follows.get(user)?.delete(author);
    this.count('unfollow');
    this.done();
  }

  async setOnline(user: string, online: boolean): Promise<void> {
    const body = online ? { user, online, ttlMs: ONLINE_TTL_MS } : { user, online };
    await this.cluster.platformOk('POST', '/v1/presence', body, 204);
    if (online) this.model.online.add(user);
    else this.model.online.delete(user);
    this.count(online ? 'online' : 'offline');
    this.done();
  }

  /**
   * What the platform stored, sent again after the store lost it: follows, presence, the posts
   * not deleted. The crash workloads make no end-user reads, so no read cursor is to restore.
   */
  async refeed(): Promise<void> {
    const { model, cluster } = this;
    if (model.readAt.size > 0) throw new Error('refeed cannot restore read cursors');
    await Promise.all(
      this.users.map(async (user) => {
        const authors = [...(model.follows.get(user) ?? [])];
        await cluster.platformOk('PUT', `/v1/users/${user}/follows`, { authors }, 204);
        if (model.online.has(user)) {
          const presence = { user, online: true, ttlMs: ONLINE_TTL_MS };
          await cluster.platformOk('POST', '/v1/presence', presence, 204);
        }
      }),
    );
    const posts = [...model.posts]
      .filter(([key]) => !model.deleted.has(key))
      .map(([key, { author, ts }]) => ({ author, id: key.slice(key.indexOf('/') + 1), ts }));
    for (let i = 0; i < posts.length; i += 500) {
      await cluster.platformOk('POST', '/v1/posts', { posts: posts.slice(i, i + 500) }, 202);
    }
  }

  /** Posts (author, id, ts); checks accepted/ignored against the model. */
  async ingest(posts: Array<{ author: string; id: string; ts: number }>): Promise<void> {
    const minTs = Date.now() - L;
    let accepted = 0;
    let ignored = 0;
    const body = posts.length === 1 ? posts[0] : { posts };
    const reply = (await this.cluster.platformOk('POST', '/v1/posts', body, 202)) as {
      accepted: number;
      ignored: number;
    };
    for (const post of posts) {
      const key = `${post.author}/${post.id}`;
      if (post.ts <= minTs || this.model.deleted.has(key)) {
        ignored++;
        continue;
      }
      accepted++;
      if (!this.model.posts.has(key))
        this.model.posts.set(key, { author: post.author, ts: post.ts });
    }
    if (reply.accepted !== accepted || reply.ignored !== ignored) {
      throw new Error(
        `POST /v1/posts ${JSON.stringify(posts)} answered ${JSON.stringify(reply)}, the model says ${JSON.stringify({ accepted, ignored })}`,
      );
    }
    this.count('ingest');
    this.done();
  }

  async remove(author: string, id: string): Promise<void> {
    await this.cluster.platformOk('DELETE', `/v1/posts/${author}/${id}`, undefined, 204);
    this.model.deleted.add(`${author}/${id}`);
    this.count('delete');
    this.done();
  }

  async readUpTo(user: string, upTo: number): Promise<void> {
    const reply = await this.cluster.client(user, 'POST', '/v1/badge/read', {
      scope: 'feed',
      upTo,
    });
    if (reply.status !== 200) throw new Error(`read ${user} answered ${reply.status}`);
    this.model.advanceRead(user, upTo);
    this.count('read upTo');
    this.done();
  }

  async readAll(user: string): Promise<void> {
    const window = { lo: Date.now(), hi: Infinity };
    this.model.readWindows.push(window);
    const reply = await this.cluster.client(user, 'POST', '/v1/badge/read', { scope: 'all' });
    window.hi = Date.now();
    if (reply.status !== 200) throw new Error(`read ${user} answered ${reply.status}`);
    this.model.advanceRead(user, window.hi);
    this.count('read all');
    this.done();
  }

  /** New posts by `author`, fresh ids, ts in the window. */
  async post(author: string, n = 1): Promise<void> {
    const posts = Array.from({ length: n }, () => ({
      author,
      id: `p${++this.postSeq}`,
      ts: this.postTs(),
    }));
    await this.ingest(posts);
  }

  // ---------------------------------------------------------------------------- random run

  /** `opsPerLane` random operations in each of the lanes, concurrently. */
  async run(opsPerLane: number): Promise<void> {
    await Promise.all(
      Array.from({ length: this.lanes }, (_, lane) => this.runLane(lane, opsPerLane)),
    );
  }

  private laneOf<T>(list: readonly T[], lane: number): T[] {
    return list.filter((_, i) => i % this.lanes === lane);
  }

  private async runLane(lane: number, ops: number): Promise<void> {
    const users = this.laneOf(this.users, lane);
    const authors = this.laneOf(this.options.authors, lane);
    const mine: string[] = [];
    for (let i = 0; i < ops; i++) {
      const r = this.options.rand();
      const user = this.pick(users);
      const author = this.pick(authors);
      if (r < 0.35) {
        // A batch of fresh posts, sometimes with a duplicate (other ts: the first one wins),
        // one outside the lookback (ignored), or a deleted one again (ignored).
        const posts = Array.from({ length: 1 + Math.floor(this.options.rand() * 4) }, () => ({
          author,
          id: `p${++this.postSeq}`,
          ts: this.postTs(),
        }));
        mine.push(...posts.map((p) => p.id));
        if (this.chance(0.3) && mine.length > 0) {
          posts.push({ author, id: this.pick(mine), ts: this.postTs() });
        }
        if (this.chance(0.15)) {
          posts.push({ author, id: `old${++this.postSeq}`, ts: Date.now() - 8 * DAY_MS });
        }
        await this.ingest(posts);
      } else if (r < 0.45) {
        // Delete a post of ours (maybe already deleted), or one never posted.
        const id = this.chance(0.8) && mine.length > 0 ? this.pick(mine) : `ghost${++this.postSeq}`;
        await this.remove(author, id);
      } else if (r < 0.5) {
        // Re-ingest a deleted post: ignored.
        const gone = [...this.model.deleted].filter((k) => k.startsWith(`${author}/`));
        if (gone.length > 0) {
          await this.ingest([{ author, id: this.pick(gone).split('/')[1]!, ts: this.postTs() }]);
        }
      } else if (r < 0.6) {
        await this.follow(user, this.pick(this.options.authors));
      } else if (r < 0.67) {
        const follows = [...(this.model.follows.get(user) ?? [])];
        if (follows.length > 0) await this.unfollow(user, this.pick(follows));
      } else if (r < 0.7) {
        await this.replaceFollows(
          user,
          this.sample(this.options.authors, Math.floor(this.options.rand() * 7)),
        );
      } else if (r < 0.86 && this.options.clientReads === false) {
        await this.post(author, 1);
      } else if (r < 0.82) {
        const upTo = Math.floor(Date.now() - 1_000 - this.options.rand() * 3 * DAY_MS);
        await this.readUpTo(user, upTo);
      } else if (r < 0.86) {
        await this.readAll(user);
      } else if (r < 0.88) {
        // One post in the future refuses the whole batch; nothing is stored.
        const reply = await this.cluster.platform('POST', '/v1/posts', {
          posts: [
            { author, id: `f${++this.postSeq}`, ts: this.postTs() },
            { author, id: `f${++this.postSeq}`, ts: Date.now() + 3_600_000 },
          ],
        });
        if (reply.status !== 422) throw new Error(`a future post answered ${reply.status}`);
        this.count('future (refused)');
      } else if (r < 0.91) {
        await this.setOnline(user, !this.model.online.has(user));
      } else {
        await this.post(author, 1);
      }
    }
  }

  /**
   * Posts by random followed authors every `everyMs` until the returned stop is called (which
   * resolves once the last post was answered): writes keep flowing through a handover.
   */
  background(everyMs: number): () => Promise<number> {
    let stopped = false;
    let posted = 0;
    const loop = (async () => {
      while (!stopped) {
        const authors = this.authorsFollowedBy([...this.model.online]);
        await this.post(this.pick(authors.length > 0 ? authors : this.options.authors), 1);
        posted++;
        await new Promise((resolve) => setTimeout(resolve, everyMs));
      }
    })();
    return async () => {
      stopped = true;
      await loop;
      return posted;
    };
  }

  // ------------------------------------------------------------------------------ checking

  /** Users whose stored badge (written by the cores) differs from the model, now. */
  async storedMismatches(users: readonly string[]): Promise<string[]> {
    const T = Date.now();
    const stored = await Promise.all(users.map((u) => this.cluster.storedFeed(u)));
    const out: string[] = [];
    users.forEach((user, i) => {
      const expected = this.model.feed(user, T);
      if ((stored[i] ?? 0) !== expected) out.push(`${user}: stored ${stored[i]} model ${expected}`);
    });
    return out;
  }

  /**
   * (a) The stored badge of every online user equals the model, within a few sweeps. Reads the
   * Redis hash directly, before any GET of the user (which would cold-compute and rewrite it).
   */
  async expectStoredBadges(timeoutMs = 10 * this.cluster.tickMs + 2_000): Promise<void> {
    const online = [...this.model.online].sort();
    let last: string[] = [];
    try {
      await waitFor(
        async () => {
          last = await this.storedMismatches(online);
          return last.length === 0;
        },
        { timeoutMs, intervalMs: 50 },
      );
    } catch {
      // Each mismatched user's published writes, in order: fence (- for a gateway's) and feed.
      const history = last.map((line) => {
        const user = line.slice(0, line.indexOf(':'));
        const writes = this.cluster.published
          .filter((p) => p.users.includes(user))
          .map((p) => `${p.fence ?? '-'}:${p.feeds[p.users.indexOf(user)]}`);
        return `${user} was written ${writes.join(' ')}`;
      });
      throw new Error(
        `stored badges of online users differ from the model after ${timeoutMs} ms:\n  ` +
          [...last, ...history].join('\n  '),
      );
    }
  }

  /** Once `cores` swept twice after the last write, (a) holds. */
  async expectWrittenBy(cores: RoleProcess[]): Promise<void> {
    await this.cluster.waitSwept(cores, this.lastWriteAt);
    await this.expectStoredBadges();
  }

  /** (b) GET /v1/users/{u}/badge of every user, online or not, equals the model. */
  async expectServedBadges(): Promise<void> {
    const wrong: string[] = [];
    for (const user of this.users) {
      const reply = await this.cluster.platform('GET', `/v1/users/${user}/badge`);
      const feed = (reply.body as { feed?: number } | undefined)?.feed;
      const expected = this.model.feed(user);
      if (reply.status !== 200 || feed !== expected) {
        wrong.push(`${user}: served ${reply.status} feed ${feed}, model ${expected}`);
      }
    }
    if (wrong.length > 0)
      throw new Error(`served badges differ from the model:\n  ${wrong.join('\n  ')}`);
  }
}

export function ids(prefix: string, n: number): string[] {
  return Array.from({ length: n }, (_, i) => `${prefix}${String(i).padStart(2, '0')}`);
}
