import { idRecord } from '@bubble/protocol';
import type { CounterCounts, CounterEvent, InteractionCounters } from './counters.js';
import type { RedisClient } from '../redis/connect.js';
import type { RedisKeys } from '../redis/keys.js';
import { scripts, type ScriptRunner } from '../redis/scripts.js';
import { ScriptStatus } from '../redis/script-status.js';

const LAST_STAMP_PREFIX = 'l:';
/** Kinds counted per script call (countCounters-4): the default three in one round trip. */
export const KINDS_PER_COUNT = 3;

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
    // One call per (user, kind), a fixed set of keys on the user's slot: a cluster client
    // routes (and auto-pipelines) each by its first key.
    const groups = new Map<string, { user: string; kind: string; ids: string[] }>();
    for (const { user, kind, id } of events) {
      const key = `${user}\n${kind}`;
      const group = groups.get(key);
      if (group) group.ids.push(id);
      else groups.set(key, { user, kind, ids: [id] });
    }
    const { keys } = this;
    const replies = await Promise.all(
      [...groups.values()].map(({ user, kind, ids }) =>
        this.run.ingestCounters(
          [keys.counterState(user), keys.counterRetracted(user), keys.counterEvents(user, kind)],
          [windowMs, kind, ...ids],
        ),
      ),
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
    const state = keys.counterState(user);
    const chunks: string[][] = [];
    for (let i = 0; i < kinds.length; i += KINDS_PER_COUNT) {
      chunks.push(kinds.slice(i, i + KINDS_PER_COUNT));
    }
    const replies = await Promise.all(
      chunks.map((chunk) => {
        const events = chunk.map((kind) => keys.counterEvents(user, kind));
        while (events.length < KINDS_PER_COUNT) events.push(events[events.length - 1]!);
        return this.run.countCounters(
          [state, events[0]!, events[1]!, events[2]!],
          [windowMs, ...chunk],
        );
      }),
    );
    return countsOfReplies(chunks, replies);
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

/**
 * CounterCounts of the replies of countUserCounters (includes/countUserCounters.lua), one per
 * chunk of kinds: each call counts its kinds atomically, so the lowest watermark bounds every
 * event missed.
 */
export function countsOfReplies(
  chunks: ReadonlyArray<readonly string[]>,
  replies: ReadonlyArray<readonly number[]>,
): CounterCounts {
  const counts = idRecord<number>();
  let asOf: number | null = null;
  chunks.forEach((chunk, c) => {
    const [watermark, ...each] = replies[c]!;
    chunk.forEach((kind, i) => {
      if (each[i]! > 0) counts[kind] = each[i]!;
    });
    if (watermark !== ScriptStatus.Refused)
      asOf = asOf === null ? watermark! : Math.min(asOf, watermark!);
  });
  return { counts, asOf };
}

/** The counts of two disjoint sets of kinds, counted apart: the lower watermark bounds both. */
export function bothCounts(a: CounterCounts, b: CounterCounts): CounterCounts {
  const counts = idRecord<number>();
  Object.assign(counts, a.counts, b.counts);
  const asOf = a.asOf === null ? b.asOf : b.asOf === null ? a.asOf : Math.min(a.asOf, b.asOf);
  return { counts, asOf };
}
