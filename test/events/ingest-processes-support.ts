/**
 * What the ingest-stream process tests (ingest-processes-*.test.ts) share: one redis-server and
 * a working directory per file (the built CLI's roles run there), the roles' settings, reading
 * the stream's partitions straight from Redis, a brute-force model of the ops, and /metrics.
 */
import { ingestPartitionOf, RedisKeys } from '@bubble/store';
import { BubbleProcess, freePort, RoleProcess, waitFor } from '@bubble/test-utils';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { HoldingProxy } from '../cluster/holding-proxy.js';
import { startRoleRig, type RoleRig } from '../support/role-rig.js';
import { feedCount } from '../support/feed-definition.js';
import { httpCall, jsonBody } from '../support/http.js';

export const API_KEY = 'ingest-ops-api-key-5c0e81f2a7b94d36';
export const JWT_SECRET = 'ingest-ops-jwt-secret-d92a4c17e05b8f63';
export const PARTITIONS = 2;
export const CLAIM_MS = 1_000;
export const GROUP = 'bubble';

export let rig: RoleRig;
export let direct: Redis;
export const running: BubbleProcess[] = [];
export const proxies: HoldingProxy[] = [];

/** Builds the workspace, starts the redis-server and the working directory of this file. */
export function useIngestProcesses(): void {
  beforeAll(async () => {
    rig = await startRoleRig('ingest-ops');
    direct = new Redis(rig.redis.url, { maxRetriesPerRequest: 1 });
  }, 300_000);

  afterEach(async () => {
    await Promise.all(running.splice(0).map((run) => run.kill()));
    await Promise.all(proxies.splice(0).map((proxy) => proxy.close()));
  });

  afterAll(async () => {
    direct?.disconnect();
    await rig?.stop();
  });
}

export function settings(prefix: string, redisUrl = rig.redis.url): Record<string, string> {
  return {
    REDIS_URL: redisUrl,
    BUBBLE_KEY_PREFIX: prefix,
    BUBBLE_API_KEY: API_KEY,
    BUBBLE_JWT_SECRET: JWT_SECRET,
    BUBBLE_INGEST_PARTITIONS: String(PARTITIONS),
    BUBBLE_INGEST_CLAIM_MS: String(CLAIM_MS),
    BUBBLE_INGEST_BLOCK_MS: '200',
    BUBBLE_INGEST_MAX_DELIVERIES: '2',
    BUBBLE_TICK: '200',
    LOG_LEVEL: 'info',
  };
}

export async function spawnRole(
  role: 'gateway' | 'all',
  env: Record<string, string>,
  name: string,
): Promise<RoleProcess> {
  const proc = new RoleProcess({ role, port: await freePort(), name, cwd: rig.cwd, env });
  running.push(proc);
  await proc.listening(30_000);
  await proc.waitHttpOk(`${proc.url}/readyz`, 20_000);
  return proc;
}

/** `bubble <args>` to its end, with the same settings as the roles. */
export async function cli(args: string[], env: Record<string, string>) {
  const run = new BubbleProcess({ args, cwd: rig.cwd, env });
  running.push(run);
  const exit = await run.waitExit(20_000);
  return { code: exit.code, stdout: run.stdout, stderr: run.stderr };
}

export async function platform(base: string, method: string, route: string): Promise<unknown> {
  const reply = await httpCall(base, method, route, { apiKey: API_KEY });
  if (reply.status !== 200) throw new Error(`${method} ${route} answered ${reply.status}`);
  return jsonBody(reply);
}

// ------------------------------------------------------------------ reading Redis directly

export interface PartitionState {
  /** Entries of the group read so far (XINFO GROUPS entries-read). */
  read: number;
  lag: number;
  pending: number;
  consumers: Map<string, number>;
  dead: number;
}

/** The group's view of one partition, measured with plain commands (not the code under test). */
export async function partitionState(keys: RedisKeys, partition: number): Promise<PartitionState> {
  const stream = keys.ingest(partition);
  const dead = await direct.xlen(keys.ingestDead(partition));
  const groups = (await direct.xinfo('GROUPS', stream).catch(() => [])) as unknown[][];
  const group = groups.map(fieldMap).find((g) => g.get('name') === GROUP);
  if (!group) return { read: 0, lag: 0, pending: 0, consumers: new Map(), dead };
  const summary = (await direct.xpending(stream, GROUP)) as [
    number,
    string | null,
    string | null,
    [string, string][] | null,
  ];
  return {
    read: Number(group.get('entries-read') ?? 0),
    lag: Number(group.get('lag') ?? 0),
    pending: Number(summary[0]),
    consumers: new Map((summary[3] ?? []).map(([name, n]) => [name, Number(n)])),
    dead,
  };
}

export function fieldMap(flat: unknown[]): Map<string, unknown> {
  const map = new Map<string, unknown>();
  for (let i = 0; i + 1 < flat.length; i += 2) map.set(String(flat[i]), flat[i + 1]);
  return map;
}

export async function states(keys: RedisKeys): Promise<PartitionState[]> {
  return Promise.all(Array.from({ length: PARTITIONS }, (_, p) => partitionState(keys, p)));
}

/**
 * Waits until the group has read `appended[p]` entries of each partition p, none pending or
 * undelivered: every entry appended was acknowledged (or dead-lettered) by `consumer`'s time.
 */
export async function drained(
  keys: RedisKeys,
  appended: number[],
  consumer: RoleProcess,
  timeoutMs: number,
): Promise<void> {
  let last: PartitionState[] = [];
  await waitFor(
    async () => {
      last = await states(keys);
      return last.every((s, p) => s.read === appended[p] && s.pending === 0 && s.lag === 0);
    },
    { timeoutMs, intervalMs: 100 },
  ).catch((err: unknown) => {
    const seen = last.map(({ read, lag, pending, dead }) => ({ read, lag, pending, dead }));
    throw new Error(
      `${consumer.name} never drained the stream (appended ${JSON.stringify(appended)}, last seen ${JSON.stringify(seen)}): ${String(err)}\n${consumer.describe()}`,
    );
  });
}

/**
 * Whether an entry naming `author` (the proxy held the first write naming it) is pending in the
 * group: read, never acknowledged.
 */
export async function entryNamingPending(keys: RedisKeys, author: string): Promise<boolean> {
  for (let partition = 0; partition < PARTITIONS; partition++) {
    const stream = keys.ingest(partition);
    const entries = (await direct.xrange(stream, '-', '+')) as [string, string[]][];
    for (const [id, fields] of entries) {
      if (!(fields[fields.indexOf('body') + 1] ?? '').includes(`"${author}"`)) continue;
      const pending = (await direct.xpending(stream, GROUP, id, id, 1)) as unknown[];
      if (pending.length === 1) return true;
    }
  }
  return false;
}

export async function withDeadline<T>(
  promise: Promise<T>,
  ms: number,
  message: () => string,
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${message()} (within ${ms} ms)`)), ms);
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** A few dead letters of each partition as `op: error`, for failure messages. */
export async function someDeadErrors(keys: RedisKeys): Promise<string[]> {
  const errors = new Set<string>();
  for (let partition = 0; partition < PARTITIONS; partition++) {
    for (const [, raw] of await direct.xrange(keys.ingestDead(partition), '-', '+', 'COUNT', 5)) {
      const fields = fieldMap(raw);
      errors.add(`${String(fields.get('op'))}: ${String(fields.get('error'))}`);
    }
  }
  return [...errors];
}

// ------------------------------------------------------------------------------ workload

export type Op = { op: string; body: Record<string, unknown>; entity: string };

/**
 * The brute-force model of what the stream's ops mean, for ops whose final state does not
 * depend on their order (a reclaimed entry is applied after later ones): follows only added,
 * posts with unique ids (some sent again: applied once), deletes (a deleted post never
 * counts, whenever its post comes).
 */
export class Model {
  readonly follows = new Map<string, Set<string>>();
  readonly posts = new Map<string, { author: string; ts: number }>();
  readonly deleted = new Set<string>();

  follow(user: string, author: string): Op {
    let set = this.follows.get(user);
    if (!set) this.follows.set(user, (set = new Set()));
    set.add(author);
    return { op: 'follow', body: { user, author }, entity: user };
  }

  post(author: string, ids: string[], ts: number): Op {
    for (const id of ids) this.posts.set(`${author}/${id}`, { author, ts });
    const posts = ids.map((id) => ({ author, id, ts }));
    return {
      op: 'post',
      body: posts.length === 1 ? posts[0]! : { posts },
      entity: author,
    };
  }

  deletePost(author: string, id: string): Op {
    this.deleted.add(`${author}/${id}`);
    return { op: 'deletePost', body: { author, id }, entity: author };
  }

  feed(user: string, T: number): number {
    return feedCount(this.posts, this.deleted, this.follows.get(user) ?? new Set(), undefined, T);
  }
}

/** `count` random ops over `users` and `authors`; post ids are unique over the whole run. */
export function randomOps(
  model: Model,
  rand: () => number,
  count: number,
  users: string[],
  authors: string[],
  serial: { next: number },
): Op[] {
  const pick = <T>(list: readonly T[]): T => list[Math.floor(rand() * list.length)]!;
  const ops: Op[] = [];
  const now = Date.now();
  while (ops.length < count) {
    const roll = rand();
    if (roll < 0.25) ops.push(model.follow(pick(users), pick(authors)));
    else if (roll < 0.6) {
      const size = rand() < 0.3 ? 1 + Math.floor(rand() * 20) : 1;
      const ids = Array.from({ length: size }, () => `p${serial.next++}`);
      ops.push(model.post(pick(authors), ids, now - 60_000 - Math.floor(rand() * 3_600_000)));
    } else if (model.posts.size > 0) {
      const [key] = [...model.posts.keys()].slice(Math.floor(rand() * model.posts.size));
      const [author, id] = key!.split('/') as [string, string];
      // A post sent again, as a platform retrying does: stored once.
      if (roll < 0.8) ops.push(model.deletePost(author, id));
      else ops.push(model.post(author, [id], model.posts.get(key!)!.ts));
    }
  }
  return ops;
}

/** XADDs the ops to their partitions, in order, pipelined; the count per partition. */
export async function append(keys: RedisKeys, ops: Op[]): Promise<number[]> {
  const perPartition = Array.from({ length: PARTITIONS }, () => 0);
  const pipeline = direct.pipeline();
  for (const { op, body, entity } of ops) {
    const partition = ingestPartitionOf(entity, PARTITIONS);
    perPartition[partition]!++;
    pipeline.xadd(keys.ingest(partition), '*', 'v', '1', 'op', op, 'body', JSON.stringify(body));
  }
  const results = await pipeline.exec();
  for (const [err] of results ?? []) if (err) throw err;
  return perPartition;
}

export async function expectEffects(base: string, model: Model, users: string[]): Promise<void> {
  const T = Date.now();
  const wrong: string[] = [];
  for (const user of users) {
    const follows = (await platform(base, 'GET', `/v1/users/${user}/follows`)) as {
      authors: string[];
    };
    const expectedFollows = [...(model.follows.get(user) ?? [])].sort();
    if (JSON.stringify([...follows.authors].sort()) !== JSON.stringify(expectedFollows)) {
      wrong.push(`${user} follows ${follows.authors.join(',')}, expected ${expectedFollows}`);
    }
    const badge = (await platform(base, 'GET', `/v1/users/${user}/badge`)) as { feed: number };
    const feed = model.feed(user, T);
    if (badge.feed !== feed) wrong.push(`${user} feed ${badge.feed}, expected ${feed}`);
  }
  expect(wrong).toEqual([]);
}

/** A sample of /metrics: `name` with exactly `labels` (e.g. `partition="0"`), or without any. */
export function metric(text: string, name: string, labels?: string): number | undefined {
  const start = labels === undefined ? `${name} ` : `${name}{${labels}} `;
  const line = text.split('\n').find((l) => l.startsWith(start));
  return line === undefined ? undefined : Number(line.slice(start.length));
}

export async function metricsOf(proc: RoleProcess): Promise<string> {
  const response = await fetch(`${proc.url}/metrics`);
  return response.text();
}
