import type { ScriptRunner } from '../redis/scripts.js';
import type { SlotSpread } from '../redis/slot-spread.js';

/** Moves per advanceCursors call on a standalone Redis: a bounded step for the server. */
const MOVES_CHUNK = 1000;

/**
 * Moves the cursor `field` forward in the hash of each move (a user's cursors or marks): a
 * call per move on a Redis Cluster (their keys are in many slots; ioredis pipelines them into
 * one write per node), a call per chunk of moves on one server. The cursors after the moves,
 * in input order.
 */
export function advanceCursorFields(
  run: ScriptRunner,
  spread: SlotSpread,
  field: string,
  moves: ReadonlyArray<{ key: string; to: number }>,
): Promise<number[]> {
  return spread.map(
    moves,
    MOVES_CHUNK,
    async ({ key, to }) => Number(await run.advanceCursor([key], [field, to])),
    async (chunk) => {
      const after = await run.advanceCursors(
        chunk.map((move) => move.key),
        [field, ...chunk.map((move) => move.to)],
      );
      return after.map(Number);
    },
  );
}
