import type { Redis } from 'ioredis';

/**
 * What a key holds, by its name (packages/store/src/redis/keys.ts). The first group is per user
 * (a key of its own, or a field or member of a per-pool or global key); `posts` grows with the
 * posts of the lookback window; `logs` are the capped change logs; `cluster` is the rest.
 */
export const USER_KEY_CLASSES = [
  'follows',
  'cursors',
  'marks',
  'lastSeen',
  'badges',
  'presence',
  'routes',
  'touched',
  'offline',
  'conversations',
] as const;

export type UserKeyClass = (typeof USER_KEY_CLASSES)[number];
export type KeyClass = UserKeyClass | 'posts' | 'logs' | 'cluster';

const PATTERNS: [RegExp, KeyClass][] = [
  // Follows and topic follows (format 2 and the format-1 SETs) and a fetch of them in flight.
  [/^[^{]*\{u:[^}]*\}:(follows|topics)(:v2)?$/, 'follows'],
  [/^[^{]*\{u:[^}]*\}:fetching$/, 'follows'],
  [/^[^{]*\{u:[^}]*\}:cursors$/, 'cursors'],
  [/^[^{]*:marks:\{u:[^}]*\}$/, 'marks'],
  [/^[^{]*:marks:\{g\}:lastseen$/, 'lastSeen'],
  [/^[^{]*\{p:\d+\}:badges$/, 'badges'],
  [/^[^{]*\{p:\d+\}:online$/, 'presence'],
  [/^[^{]*\{p:\d+\}:routes$/, 'routes'],
  [/^[^{]*\{p:\d+\}:touched$/, 'touched'],
  [/^[^{]*\{p:\d+\}:offline$/, 'offline'],
  [/^[^{]*:im:/, 'conversations'],
  [/^[^{]*\{a:[^}]*\}:(posts|deleted)$/, 'posts'],
  [/^[^{]*\{p:\d+\}:events$/, 'logs'],
  [/^[^{]*\{g\}:(posts|shared)$/, 'logs'],
];

export function keyClass(key: string): KeyClass {
  for (const [pattern, name] of PATTERNS) if (pattern.test(key)) return name;
  return 'cluster';
}

export interface RedisMemorySnapshot {
  /** Σ MEMORY USAGE (SAMPLES 0: every element counted) of the keys of each class. */
  bytes: Record<KeyClass, number>;
  keys: Record<KeyClass, number>;
  /** INFO memory's used_memory: everything the allocator handed out, buffers included. */
  usedMemory: number;
}

/**
 * Every key under `prefix`, SCANned, with MEMORY USAGE summed by class. MEMORY USAGE asks the
 * allocator for each allocation's real size, so a class's figure does not move with other
 * clients' buffers or the change logs, which INFO's used_memory delta includes.
 */
export async function redisMemory(admin: Redis, prefix: string): Promise<RedisMemorySnapshot> {
  const classes: KeyClass[] = [...USER_KEY_CLASSES, 'posts', 'logs', 'cluster'];
  const bytes = Object.fromEntries(classes.map((c) => [c, 0])) as Record<KeyClass, number>;
  const keys = Object.fromEntries(classes.map((c) => [c, 0])) as Record<KeyClass, number>;
  let cursor = '0';
  let rounds = 0;
  do {
    const [next, batch] = await admin.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 2000);
    cursor = next;
    if (batch.length > 0) {
      const pipeline = admin.pipeline();
      for (const key of batch) pipeline.call('MEMORY', 'USAGE', key, 'SAMPLES', '0');
      const results = (await pipeline.exec()) ?? [];
      batch.forEach((key, i) => {
        const [err, usage] = results[i] ?? [null, null];
        // A key that expired between SCAN and MEMORY USAGE answers nil.
        if (err || usage === null) return;
        const name = keyClass(key);
        bytes[name] += Number(usage);
        keys[name] += 1;
      });
    }
    if (++rounds > 100_000) throw new Error('SCAN did not finish within 100,000 rounds');
  } while (cursor !== '0');
  const info = await admin.info('memory');
  const usedMemory = Number(/^used_memory:(\d+)/m.exec(info)?.[1] ?? NaN);
  return { bytes, keys, usedMemory };
}

/** Per user: each user class's bytes ÷ `users`, and their sum as `total`. */
export function perUser(snapshot: RedisMemorySnapshot, users: number) {
  const byClass: Record<string, number> = {};
  let total = 0;
  for (const name of USER_KEY_CLASSES) {
    const bytes = snapshot.bytes[name];
    if (bytes === 0) continue;
    byClass[name] = Math.round(bytes / users);
    total += bytes;
  }
  return { total: Math.round(total / users), byClass };
}

/**
 * Σ MEMORY USAGE of the conversation keys (`im:`) under `prefix`, split three ways: a user's own
 * (im:{u:…}: their list, activity index, large groups), the member hashes (a member's field
 * holds their read seq: membership and cursor in one), and each conversation's shared state.
 */
export async function conversationMemory(admin: Redis, prefix: string) {
  const bytes = { user: 0, members: 0, shared: 0 };
  let cursor = '0';
  do {
    const [next, batch] = await admin.scan(cursor, 'MATCH', `${prefix}:im:*`, 'COUNT', 2000);
    cursor = next;
    if (batch.length === 0) continue;
    const pipeline = admin.pipeline();
    for (const key of batch) pipeline.call('MEMORY', 'USAGE', key, 'SAMPLES', '0');
    const results = (await pipeline.exec()) ?? [];
    batch.forEach((key, i) => {
      const usage = Number(results[i]?.[1] ?? 0);
      if (/:im:\{u:/.test(key)) bytes.user += usage;
      else if (/:members$/.test(key)) bytes.members += usage;
      else bytes.shared += usage;
    });
  } while (cursor !== '0');
  return bytes;
}
