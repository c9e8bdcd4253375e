import type { RedisStore } from '@bubble/store';
import type { RoleProcess } from '@bubble/test-utils';
import { spawnRole } from './children.js';
import type { SdkFleet } from './sdk-fleet.js';

/** `users[i]` follows `authors[authorOf[i]]` alone, written 1,000 users at a time. */
export async function followOneEach(
  store: RedisStore,
  users: readonly string[],
  authors: readonly string[],
  authorOf: Int32Array,
): Promise<void> {
  for (let i = 0; i < users.length; i += 1000) {
    await Promise.all(
      users
        .slice(i, i + 1000)
        .map((u, k) => store.follows.replace(u, [authors[authorOf[i + k]!]!])),
    );
  }
}

/** `bubble server` and `bubble core` children, listening, added to `children`. */
export async function startServerAndCore(
  env: Record<string, string>,
  log: (line: string) => void,
  children: RoleProcess[],
): Promise<void> {
  for (const role of ['server', 'core'] as const) {
    const child = await spawnRole({ role, env, log });
    children.push(child);
    await child.listening(30_000);
  }
}

export type PlatformCall = (
  method: string,
  route: string,
  body?: unknown,
) => Promise<{ status: number; json: unknown }>;

/** Platform calls (X-Api-Key) to the gateway at `url`. */
export function platformCall(url: string, apiKey: string): PlatformCall {
  return async (method, route, body) => {
    const res = await fetch(url + route, {
      method,
      headers: { 'x-api-key': apiKey, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, json: (await res.json().catch(() => null)) as unknown };
  };
}

/** The users whose client is closed or holds another badge than the stored one. */
export async function wrongBadges(clients: SdkFleet, platform: PlatformCall): Promise<string[]> {
  const held = await clients.badges();
  const out: string[] = [];
  let next = 0;
  const worker = async () => {
    while (next < held.users.length) {
      const i = next++;
      const answer = await platform('GET', `/v1/users/${held.users[i]}/badge`);
      const stored = answer.json as { epoch: string; version: number; feed: number };
      if (
        !held.open[i] ||
        stored.epoch !== held.epochs[i] ||
        stored.version !== held.versions[i] ||
        stored.feed !== held.feeds[i]
      )
        out.push(held.users[i]!);
    }
  };
  await Promise.all(Array.from({ length: 32 }, worker));
  return out;
}
