import { poolOf } from '@bubble/protocol';
import type { RedisKeys } from '../redis/keys.js';
import type { ScriptRunner } from '../redis/scripts.js';
import type { SlotSpread } from '../redis/slot-spread.js';

/**
 * presence.isOnline() of each user, in input order, on the server's clock (as checkOnline-1):
 * one script call for them all on one server, one per pool among them on a Cluster.
 */
export async function onlineAmong(
  run: ScriptRunner,
  spread: SlotSpread,
  keys: RedisKeys,
  users: readonly string[],
): Promise<boolean[]> {
  const online = new Array<boolean>(users.length).fill(false);
  if (users.length === 0) return online;
  const byPool = new Map<number, number[]>();
  for (let i = 0; i < users.length; i++) {
    const pool = poolOf(users[i]!, keys.pools);
    const indexes = byPool.get(pool);
    if (indexes) indexes.push(i);
    else byPool.set(pool, [i]);
  }
  // One call per pool on a Cluster, one for them all on one server.
  const checkPools = async (pools: ReadonlyArray<[number, number[]]>) => {
    const onlineKeys: string[] = [];
    const args: string[] = [];
    const order: number[] = [];
    for (const [pool, indexes] of pools) {
      onlineKeys.push(keys.online(pool));
      const keyIndex = String(onlineKeys.length);
      for (const i of indexes) {
        args.push(keyIndex, users[i]!);
        order.push(i);
      }
    }
    const flags = await run.checkOnlineAmong(onlineKeys, args);
    order.forEach((index, j) => (online[index] = flags[j] === 1));
  };
  await spread.map(
    [...byPool],
    Infinity,
    (pool) => checkPools([pool]),
    (all) => checkPools(all).then(() => []),
  );
  return online;
}
