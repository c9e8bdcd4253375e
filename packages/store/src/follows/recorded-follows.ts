/**
 * The follow changes received while a fetch of a user's sources is in flight, and how they go on
 * top of the platform's answer (docs/semantics.md, "Where a user's sources live"). The memory
 * engine keeps them as this; the Redis engine in the fetch marker hash, applied by the same rule
 * in Lua (lua/includes/recordedFollows.lua).
 */

/** Which list a change is of: 'a' the authors, 't' the topics (the marker's field prefixes). */
export type FollowKind = 'a' | 't';

/** One kind's recorded changes: the last change of each id touched, so idempotent and bounded. */
export interface RecordedFollows {
  /** A replace was recorded: the answer's list of this kind no longer counts. */
  replaced: boolean;
  /** id → the sequence number of its last change: positive added, negative removed. */
  changes: Map<string, number>;
}

/**
 * `ids` (the answer's list) with the recorded changes on top, as follow() would apply them:
 * without the removed ids (all of them after a replace), then the added ids in the order they
 * were recorded, each while the list is under `cap`.
 */
export function withRecordedChanges(
  ids: readonly string[],
  recorded: RecordedFollows | undefined,
  cap: number,
): string[] {
  const out = new Set<string>();
  if (!recorded?.replaced) {
    for (const id of ids) {
      const seq = recorded?.changes.get(id);
      if (seq === undefined || seq > 0) out.add(id);
    }
  }
  if (!recorded) return [...out];
  const adds = [...recorded.changes].filter(([, seq]) => seq > 0).sort((x, y) => x[1] - y[1]);
  for (const [id] of adds) if (out.size < cap) out.add(id);
  return [...out];
}
