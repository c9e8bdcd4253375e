import { decodeBadgeState, poolOf } from '@bubble/protocol';
import type { RedisKeys } from '@bubble/store';
import type { Redis } from 'ioredis';

/** Users looked at per poll while many are still pending (a sample; all of them afterwards). */
const SAMPLE = 1000;

/**
 * Watches the stored badge states of users until every one equals its expected feed (and no
 * other count), and the store holds the user's sources (a user whose feed is 0 would match the
 * feed-less badge served before their sources came). A user found exact is not looked at again
 * by poll(): nothing changes their sources or posts meanwhile. verify() looks at everyone.
 */
export class ExactBadges {
  private pending: number[];
  private readonly pools: Uint16Array;

  constructor(
    private readonly admin: Redis,
    private readonly keys: RedisKeys,
    private readonly users: readonly string[],
    private readonly expected: Int32Array,
  ) {
    this.pending = users.map((_, i) => i);
    this.pools = Uint16Array.from(users, (user) => poolOf(user, keys.pools));
  }

  get pendingCount(): number {
    return this.pending.length;
  }

  /**
   * Looks at a sample of the pending users while more than twice the sample are pending, and at
   * every pending user once the sample is all exact or few are left; returns the number pending.
   */
  async poll(): Promise<number> {
    if (this.pending.length > 2 * SAMPLE) {
      const step = Math.floor(this.pending.length / SAMPLE);
      const sample = Array.from({ length: SAMPLE }, (_, i) => this.pending[i * step]!);
      const exact = await this.exact(sample);
      if (exact.size < sample.length) {
        this.pending = this.pending.filter((u) => !exact.has(u));
        return this.pending.length;
      }
    }
    const exact = await this.exact(this.pending);
    this.pending = this.pending.filter((u) => !exact.has(u));
    return this.pending.length;
  }

  /** Every user looked at afresh: those not exact, with a few examples. */
  async verify(): Promise<{ notExact: number; examples: string[] }> {
    const all = this.users.map((_, i) => i);
    const exact = await this.exact(all);
    const wrong = all.filter((u) => !exact.has(u));
    const examples = await Promise.all(
      wrong.slice(0, 5).map(async (u) => {
        const user = this.users[u]!;
        const packed = await this.admin.hget(this.keys.badges(this.pools[u]!), user);
        return `${user}: stored ${packed ?? 'nothing'}, expected feed ${this.expected[u]}`;
      }),
    );
    return { notExact: wrong.length, examples };
  }

  /** Of `indices`, those whose stored badge is exact and whose sources are held. */
  private async exact(indices: readonly number[]): Promise<Set<number>> {
    const byPool = new Map<number, number[]>();
    for (const u of indices) {
      const pool = this.pools[u]!;
      let list = byPool.get(pool);
      if (!list) byPool.set(pool, (list = []));
      list.push(u);
    }
    const pipeline = this.admin.pipeline();
    const order: number[][] = [];
    for (const [pool, list] of byPool) {
      for (let i = 0; i < list.length; i += 1000) {
        const part = list.slice(i, i + 1000);
        order.push(part);
        pipeline.hmget(this.keys.badges(pool), ...part.map((u) => this.users[u]!));
      }
    }
    const replies = (await pipeline.exec()) ?? [];
    const matched: number[] = [];
    order.forEach((part, i) => {
      const [err, values] = replies[i] ?? [null, null];
      if (err) throw err;
      (values as (string | null)[]).forEach((packed, j) => {
        if (packed !== null && this.matches(packed, part[j]!)) matched.push(part[j]!);
      });
    });
    const held = this.admin.pipeline();
    for (const u of matched) held.exists(this.keys.follows(this.users[u]!));
    const present = (await held.exec()) ?? [];
    return new Set(matched.filter((_, i) => present[i]?.[1] === 1));
  }

  private matches(packed: string, u: number): boolean {
    const { fields } = decodeBadgeState(packed);
    const names = Object.keys(fields);
    const feed = fields.f ?? 0;
    return feed === this.expected[u] && names.every((name) => name === 'f');
  }
}
