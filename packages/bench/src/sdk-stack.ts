import type { RedisStore } from '@bubble/store';
import type { RoleProcess } from '@bubble/test-utils';
import type { BenchOptions } from './bench-options.js';
import { startBenchRedis, type BenchRedis } from './bench-redis.js';
import { spawnRole, stopAll } from './children.js';
import { benchSecrets, roleEnv, type BenchSecrets } from './live-stack.js';
import type { SdkFleet } from './sdk-fleet.js';

/** What the SDK scenarios (soak, storm) size alike: clients in drivers, each following one author. */
export interface SdkStackOptions extends BenchOptions {
  /** Driver processes the SDK clients are spread over. */
  drivers: number;
  authors: number;
  /** Clients per loopback source address (127.1.x.y): the gateway's limiter keeps its defaults. */
  perAddress: number;
  pools: number;
}

export const SDK_STACK_DEFAULTS: Omit<SdkStackOptions, 'authors'> = {
  drivers: 2,
  perAddress: 10,
  pools: 8,
  log: () => {},
};

/**
 * `count` users and `authorCount` authors, named after `label` and this run, user i following
 * author i mod `authorCount` alone; written 1,000 users at a time.
 */
export async function usersFollowingOneEach(
  store: RedisStore,
  label: string,
  count: number,
  authorCount: number,
): Promise<{ users: string[]; authors: string[]; authorOf: Int32Array }> {
  const tag = Date.now().toString(36);
  const users = Array.from({ length: count }, (_, i) => `${label}${i}-${tag}`);
  const authors = Array.from({ length: authorCount }, (_, k) => `${label}author${k}-${tag}`);
  const authorOf = Int32Array.from(users, (_, i) => i % authorCount);
  for (let i = 0; i < users.length; i += 1000) {
    await Promise.all(
      users
        .slice(i, i + 1000)
        .map((u, k) => store.follows.replace(u, [authors[authorOf[i + k]!]!])),
    );
  }
  return { users, authors, authorOf };
}

/** `bubble server` and `bubble core` children with the run's secrets, listening, added to `children`. */
export async function startServerAndCore(
  redisUrl: string,
  pools: number,
  secrets: BenchSecrets,
  log: (line: string) => void,
  children: RoleProcess[],
): Promise<void> {
  const env = {
    ...roleEnv(redisUrl, pools),
    BUBBLE_API_KEY: secrets.apiKey,
    BUBBLE_JWT_SECRET: secrets.jwtSecret,
  };
  for (const role of ['server', 'core'] as const) {
    const child = await spawnRole({ role, env, log });
    children.push(child);
    await child.listening(30_000);
  }
}

/** What the SDK scenarios (soak, storm) run their gateways and clients on. */
export interface SdkStack {
  redis: BenchRedis;
  /** `bubble server` and `bubble core`; a scenario adds its gateways. */
  children: RoleProcess[];
  users: string[];
  authors: string[];
  authorOf: Int32Array;
  secrets: BenchSecrets;
  /** Stops every child and the redis-server. */
  stop(): Promise<void>;
}

/**
 * The SDK scenarios' stack below their gateways: a redis-server, `count` users following one of
 * `authors` each (usersFollowingOneEach), fresh secrets, `bubble server` and `bubble core`.
 */
export async function startSdkStack(
  label: string,
  count: number,
  options: { authors: number; pools: number; log: (line: string) => void },
): Promise<SdkStack> {
  const redis = await startBenchRedis({ pools: options.pools, followCap: 2000 });
  const children: RoleProcess[] = [];
  const stop = async () => {
    await stopAll(children);
    await redis.stop();
  };
  try {
    const following = await usersFollowingOneEach(redis.store, label, count, options.authors);
    const secrets = benchSecrets();
    await startServerAndCore(redis.url, options.pools, secrets, options.log, children);
    return { redis, children, ...following, secrets, stop };
  } catch (err) {
    await stop();
    throw err;
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
