import type { CounterCounts, CounterEvent, InteractionCounters } from '../extras-types.js';
import type { RedisClient } from './connect.js';
import type { RedisKeys } from './keys.js';
import { scripts, type ScriptRunner } from './scripts.js';

const LAST_STAMP_PREFIX = 'l:';

/**
 * Interaction counters under each user's hash tag: every call is one script on one slot
 * (a batch is split per user), stamped on the server's TIME (docs/redis-keys.md).
 */
export class RedisCounters implements InteractionCounters {
  private readonly run: ScriptRunner;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: RedisKeys,
  ) {
    this.run = scripts(redis);
  }

  async ingest(
    events: readonly CounterEvent[],
    windowMs: number,
  ): Promise<{ accepted: number; ignored: number }> {
    const byUser = new Map<string, CounterEvent[]>();
    for (const event of events) {
      const of = byUser.get(event.user);
      if (of) of.push(event);
      else byUser.set(event.user, [event]);
    }
    const { keys } = this;
    const replies = await Promise.all(
      [...byUser].map(([user, own]) => {
        const kinds = [...new Set(own.map((e) => e.kind))];
        const index = new Map(kinds.map((kind, i) => [kind, i + 3]));
        const args: (string | number)[] = [];
        for (const { kind, id } of own) args.push(index.get(kind)!, kind, id);
        return this.run.ingestCounters(
          [
            keys.counterState(user),
            keys.counterRetracted(user),
            ...kinds.map((kind) => keys.counterEvents(user, kind)),
          ],
          [windowMs, ...args],
        );
      }),
    );
    let accepted = 0;
    let ignored = 0;
    for (const [a, i] of replies) {
      accepted += a;
      ignored += i;
    }
    return { accepted, ignored };
  }

  async retract({ user, kind, id }: CounterEvent, windowMs: number): Promise<boolean> {
    const { keys } = this;
    const removed = await this.run.retractCounter(
      [keys.counterState(user), keys.counterRetracted(user), keys.counterEvents(user, kind)],
      [windowMs, kind, id],
    );
    return removed === 1;
  }

  async read(user: string, kinds: readonly string[], upTo: number | undefined): Promise<void> {
    if (kinds.length === 0) return;
    await this.run.readCounters(
      [this.keys.counterState(user)],
      [upTo === undefined ? '-' : String(upTo), ...kinds],
    );
  }

  async counts(user: string, kinds: readonly string[], windowMs: number): Promise<CounterCounts> {
    const { keys } = this;
    const [asOf, ...each] = await this.run.countCounters(
      [keys.counterState(user), ...kinds.map((kind) => keys.counterEvents(user, kind))],
      [windowMs, ...kinds],
    );
    const counts: Record<string, number> = {};
    kinds.forEach((kind, i) => {
      if (each[i]! > 0) counts[kind] = each[i]!;
    });
    return { counts, asOf: asOf === -1 ? null : asOf! };
  }

  async dropUsers(users: readonly string[]): Promise<void> {
    const { keys } = this;
    await Promise.all(
      users.map(async (user) => {
        const state = keys.counterState(user);
        // The kinds the user has events of are the `l:<kind>` fields; one DEL on the user's slot.
        const kinds = (await this.redis.hkeys(state))
          .filter((field) => field.startsWith(LAST_STAMP_PREFIX))
          .map((field) => field.slice(LAST_STAMP_PREFIX.length));
        await this.redis.del(
          state,
          keys.counterRetracted(user),
          ...kinds.map((kind) => keys.counterEvents(user, kind)),
        );
      }),
    );
  }
}
