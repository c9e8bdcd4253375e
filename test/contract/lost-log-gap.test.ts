/**
 * A change log that was lost is not "no gap": a reader whose position (past LOG_START) is not a
 * position of the log it reads missed changes. On Redis the stream key vanishes (a restart
 * without persistence, eviction, a flush) and is recreated by the next append, or loses its last
 * entries (an AOF missing its last second): each reads as a gap. On both engines a position the
 * log never handed out reads as a gap; positions it did hand out, and LOG_START, read as before.
 */
import { LOG_START, RedisKeys, type ChangeLog, type PoolEvent } from '@bubble/store';
import { expect, it } from 'vitest';
import { MemoryChangeLog } from '../../packages/store/src/change-log/memory-change-log.js';
import { RedisChangeLog } from '../../packages/store/src/change-log/redis-change-log.js';
import { describeEachEngine, T0 } from '../support/engines.js';

function follows(...users: string[]): PoolEvent[] {
  return users.map((user) => ({ kind: 'follows', user }));
}

describeEachEngine('change log: a position the log does not have', (ctx, engine) => {
  function logOf(): { log: ChangeLog; keys: RedisKeys | undefined } {
    const { store, prefix } = ctx();
    if (engine === 'memory') return { log: new MemoryChangeLog(), keys: undefined };
    const keys = new RedisKeys(prefix!, store.pools);
    return { log: new RedisChangeLog({ client: ctx().admin!, keys }), keys };
  }

  it('a position the log never handed out reads as a gap; its own positions and LOG_START do not', async () => {
    const { log } = logOf();
    await log.appendPoolEvents(1, follows('a', 'b'));
    await log.appendPoolEvents(2, follows('c'));
    const endOf1 = await log.poolLogEnd(1);
    const endOf2 = await log.poolLogEnd(2);
    const [ms, seq] = endOf1.split('-').map(Number) as [number, number];

    const reads = await log.readPoolEvents(
      [
        // Past the newest entry, and before the oldest of a log never trimmed.
        { pool: 1, after: `${ms}-${seq + 1}` },
        { pool: 2, after: endOf2 },
        { pool: 3, after: endOf1 },
      ],
      10,
    );
    expect(reads.get(1)).toEqual({ entries: [], gap: true });
    const before = (await log.readPoolEvents([{ pool: 1, after: `${ms - 60_000}-0` }], 10)).get(1)!;
    expect(before.gap).toBe(true);
    expect(before.entries.map((e) => e.event)).toEqual(follows('a', 'b'));
    expect(reads.get(2)).toEqual({ entries: [], gap: false });
    // A log that has no entry at all never handed a position out either.
    expect(reads.get(3)).toEqual({ entries: [], gap: true });
    expect((await log.readPoolEvents([{ pool: 3, after: LOG_START }], 10)).get(3)).toEqual({
      entries: [],
      gap: false,
    });

    await log.appendPostEvents([{ kind: 'post', author: 'a', id: 'p1', ts: T0 }]);
    const postEnd = await log.postLogEnd();
    expect(await log.readPostEvents(postEnd, 10)).toEqual({ entries: [], gap: false });
    expect(await log.readPostEvents(`${ms + 3_600_000}-0`, 10)).toEqual({ entries: [], gap: true });
    expect(await log.readSharedEvents(endOf1, 10)).toEqual({ entries: [], gap: true });
    expect(await log.readSharedEvents(LOG_START, 10)).toEqual({ entries: [], gap: false });
  });

  if (engine !== 'redis') return;

  it('a stream whose key vanished reads as a gap, and so does the stream recreated after it', async () => {
    const { log, keys } = logOf();
    const admin = ctx().admin!;
    await log.appendPoolEvents(4, follows('a', 'b'));
    await log.appendPostEvents([{ kind: 'post', author: 'a', id: 'p1', ts: T0 }]);
    await log.appendSharedEvents([{ kind: 'notice', id: 1, live: true }]);
    const poolAt = await log.poolLogEnd(4);
    const postAt = await log.postLogEnd();
    const sharedAt = await log.sharedLogEnd();

    await admin.del(keys!.poolEvents(4), keys!.postEvents(), keys!.sharedEvents());
    expect((await log.readPoolEvents([{ pool: 4, after: poolAt }], 10)).get(4)).toEqual({
      entries: [],
      gap: true,
    });
    expect(await log.readPostEvents(postAt, 10)).toEqual({ entries: [], gap: true });
    expect(await log.readSharedEvents(sharedAt, 10)).toEqual({ entries: [], gap: true });
    // Missing reads as empty from the start, as before.
    expect(await log.poolLogEnd(4)).toBe(LOG_START);
    expect(await log.readPostEvents(LOG_START, 10)).toEqual({ entries: [], gap: false });

    // Recreated by the next appends: what it holds reads back, and the gap is still told.
    await log.appendPoolEvents(4, follows('c'));
    await log.appendPostEvents([{ kind: 'post', author: 'a', id: 'p2', ts: T0 }]);
    const recreated = (await log.readPoolEvents([{ pool: 4, after: poolAt }], 10)).get(4)!;
    expect(recreated.gap).toBe(true);
    expect(recreated.entries.map((e) => e.event)).toEqual(follows('c'));
    const posts = await log.readPostEvents(postAt, 10);
    expect(posts.gap).toBe(true);
    expect(posts.entries.map((e) => e.event.id)).toEqual(['p2']);
    // Resuming from a position of the new stream is gap-free.
    const resumed = (
      await log.readPoolEvents([{ pool: 4, after: recreated.entries[0]!.id }], 10)
    ).get(4)!;
    expect(resumed).toEqual({ entries: [], gap: false });
  });

  it('a stream that lost its newest entries (an AOF missing its tail) reads as a gap', async () => {
    const { log, keys } = logOf();
    const admin = ctx().admin!;
    await log.appendPoolEvents(5, follows('a', 'b', 'c'));
    const read = (await log.readPoolEvents([{ pool: 5, after: LOG_START }], 10)).get(5)!;
    const [first, second, third] = read.entries.map((e) => e.id);
    // What a restart from an AOF whose last second was lost leaves: the stream without the
    // newest entries a reader already read, then more appended after the restart.
    await admin.xdel(keys!.poolEvents(5), second!, third!);
    await log.appendPoolEvents(5, follows('d'));
    const lost = (await log.readPoolEvents([{ pool: 5, after: third! }], 10)).get(5)!;
    expect(lost.gap).toBe(true);
    expect(lost.entries.map((e) => e.event)).toEqual(follows('d'));
    // A reader that had only read the surviving entry sees the new one, continuous.
    const kept = (await log.readPoolEvents([{ pool: 5, after: first! }], 10)).get(5)!;
    expect(kept).toEqual({ entries: lost.entries, gap: false });
  });
});
