/**
 * Assigns pools to live cores so that counts differ by at most one while moving as few pools
 * as possible: pools stay with their live owner unless that owner holds more than its share;
 * only pools of dead cores, unowned pools and an over-full core's surplus move.
 */
export function assignPools(
  previous: readonly (string | null)[],
  cores: readonly string[],
  pools: number,
): (string | null)[] {
  const owners: (string | null)[] = Array.from({ length: pools }, () => null);
  if (cores.length === 0) return owners;
  const live = new Set(cores);
  const held = new Map<string, number[]>(cores.map((core) => [core, []]));
  for (let pool = 0; pool < pools; pool++) {
    const owner = previous[pool];
    if (owner && live.has(owner)) held.get(owner)!.push(pool);
  }
  // Those holding most get the larger quotas, so the fewest pools have to move.
  const ranked = [...cores].sort(
    (a, b) => held.get(b)!.length - held.get(a)!.length || (a < b ? -1 : 1),
  );
  const base = Math.floor(pools / cores.length);
  const larger = pools % cores.length;
  const quota = new Map(ranked.map((core, i) => [core, base + (i < larger ? 1 : 0)]));
  const free: number[] = [];
  for (const core of ranked) {
    const list = held.get(core)!;
    const surplus = list.length - quota.get(core)!;
    if (surplus > 0) free.push(...list.splice(list.length - surplus, surplus));
  }
  for (let pool = 0; pool < pools; pool++) {
    const owner = previous[pool];
    if (!owner || !live.has(owner)) free.push(pool);
  }
  free.sort((a, b) => a - b);
  for (const core of ranked) {
    const list = held.get(core)!;
    while (list.length < quota.get(core)! && free.length > 0) list.push(free.shift()!);
  }
  for (const [core, list] of held) for (const pool of list) owners[pool] = core;
  return owners;
}

export function samePlan(a: readonly (string | null)[], b: readonly (string | null)[]): boolean {
  return a.length === b.length && a.every((owner, i) => owner === b[i]);
}
