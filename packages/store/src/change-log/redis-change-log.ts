import { joinTopics, splitTopics } from '../posts/topic-windows.js';
import type { RedisClient } from '../redis/connect.js';
import type { RedisKeys } from '../redis/keys.js';
import { scripts, type ScriptRunner } from '../redis/scripts.js';
import { checkStreamId } from '../stream-id.js';
import {
  LOG_START,
  type ChangeLog,
  type LogRead,
  type PoolEvent,
  type PostEvent,
  type SharedEvent,
} from './change-log.js';
import { checkLimit, logCaps, type LogCapOptions } from './log-limits.js';

/** The caps are approximate on Redis (MAXLEN ~): a log keeps at least its cap. */
export interface RedisChangeLogOptions extends LogCapOptions {
  client: RedisClient;
  keys: RedisKeys;
}

/** What the writers that log their own changes share: notices, red dots, marks, conversations. */
export interface LoggedWriterOptions {
  client: RedisClient;
  keys: RedisKeys;
  log: RedisChangeLog;
}

/** An XRANGE entry: [id, [field, value, …]]. */
type RawEntry = [string, string[]];

/**
 * The change logs as Redis streams, one entry per event with positional fields (cheap to
 * parse, and the presence scripts write the same layout):
 *   pool  k <online|offline|follows|marks> u <user>   ·   k cursor u <user> r <readAt>
 *   posts k <post|delete> a <author> i <id> t <ts> [o <topics, space-separated>]
 *   shared k <kind> j <the event as JSON> (notices, red dots, messages: rare next to posts)
 * A batch goes through appendEvents-1.lua: one command, atomic, consecutive ids. Trimming is
 * MAXLEN ~, so a log keeps at least its cap (up to one stream node more).
 */
export class RedisChangeLog implements ChangeLog {
  readonly maxPostEvents: number;
  readonly maxPoolEvents: number;
  private readonly redis: RedisClient;
  private readonly run: ScriptRunner;
  private readonly keys: RedisKeys;

  constructor(options: RedisChangeLogOptions) {
    ({ maxPostEvents: this.maxPostEvents, maxPoolEvents: this.maxPoolEvents } = logCaps(options));
    this.redis = options.client;
    this.run = scripts(options.client);
    this.keys = options.keys;
  }

  async appendPoolEvents(pool: number, events: readonly PoolEvent[]): Promise<void> {
    if (events.length === 0) return;
    const args: (string | number)[] = [];
    for (const event of events) {
      if (event.kind === 'cursor') {
        args.push(6, 'k', event.kind, 'u', event.user, 'r', event.readAt);
      } else {
        args.push(4, 'k', event.kind, 'u', event.user);
      }
    }
    await this.run.appendEvents([this.keys.poolEvents(pool)], [this.maxPoolEvents, ...args]);
  }

  async readPoolEvents(
    cursors: ReadonlyArray<{ pool: number; after: string }>,
    limit: number,
  ): Promise<Map<number, LogRead<PoolEvent>>> {
    checkLimit(limit);
    for (const { after } of cursors) checkStreamId(after);
    // One script call per pool (each pool is its own slot); auto-pipelining sends them together.
    const reads = await Promise.all(
      cursors.map(({ pool, after }) =>
        this.run.readEvents([this.keys.poolEvents(pool)], [after, limit]),
      ),
    );
    const byPool = new Map<number, LogRead<PoolEvent>>();
    cursors.forEach(({ pool }, i) => byPool.set(pool, decodeRead(reads[i]!, decodePoolEvent)));
    return byPool;
  }

  async poolLogEnd(pool: number): Promise<string> {
    return this.logEnd(this.keys.poolEvents(pool));
  }

  async appendPostEvents(events: readonly PostEvent[]): Promise<void> {
    if (events.length === 0) return;
    const args: (string | number)[] = [];
    for (const event of events) {
      const { kind, author, id, ts } = event;
      const topics = event.kind === 'post' ? joinTopics(event.topics) : '';
      if (topics === '') args.push(8, 'k', kind, 'a', author, 'i', id, 't', ts);
      else args.push(10, 'k', kind, 'a', author, 'i', id, 't', ts, 'o', topics);
    }
    await this.run.appendEvents([this.keys.postEvents()], [this.maxPostEvents, ...args]);
  }

  async readPostEvents(after: string, limit: number): Promise<LogRead<PostEvent>> {
    checkLimit(limit);
    checkStreamId(after);
    const read = await this.run.readEvents([this.keys.postEvents()], [after, limit]);
    return decodeRead(read, decodePostEvent);
  }

  async postLogEnd(): Promise<string> {
    return this.logEnd(this.keys.postEvents());
  }

  async appendSharedEvents(events: readonly SharedEvent[]): Promise<void> {
    if (events.length === 0) return;
    const args: (string | number)[] = [];
    for (const event of events) args.push(4, 'k', event.kind, 'j', sharedEventJson(event));
    await this.run.appendEvents([this.keys.sharedEvents()], [this.maxPostEvents, ...args]);
  }

  async readSharedEvents(after: string, limit: number): Promise<LogRead<SharedEvent>> {
    checkLimit(limit);
    checkStreamId(after);
    const read = await this.run.readEvents([this.keys.sharedEvents()], [after, limit]);
    return decodeRead(read, (fields) => JSON.parse(fields[3]!) as SharedEvent);
  }

  async sharedLogEnd(): Promise<string> {
    return this.logEnd(this.keys.sharedEvents());
  }

  private async logEnd(key: string): Promise<string> {
    const [newest] = await this.redis.xrevrange(key, '+', '-', 'COUNT', 1);
    return newest?.[0] ?? LOG_START;
  }
}

/** A shared event's `j` field: the scripts that write and log in one step append it as is. */
export function sharedEventJson(event: SharedEvent): string {
  return JSON.stringify(event);
}

function decodeRead<E>(
  [gap, entries]: [number, RawEntry[]],
  decode: (fields: string[]) => E,
): LogRead<E> {
  return {
    gap: gap === 1,
    entries: entries.map(([id, fields]) => ({ id, event: decode(fields) })),
  };
}

function decodePoolEvent(fields: string[]): PoolEvent {
  const kind = fields[1];
  const user = fields[3]!;
  switch (kind) {
    case 'online':
    case 'offline':
    case 'follows':
    case 'marks':
    case 'counters':
      return { kind, user };
    case 'cursor':
      return { kind, user, readAt: Number(fields[5]) };
    default:
      throw new Error(`unknown pool event kind ${JSON.stringify(kind)}`);
  }
}

function decodePostEvent(fields: string[]): PostEvent {
  const kind = fields[1];
  if (kind !== 'post' && kind !== 'delete') {
    throw new Error(`unknown post event kind ${JSON.stringify(kind)}`);
  }
  const event: PostEvent = { kind, author: fields[3]!, id: fields[5]!, ts: Number(fields[7]) };
  if (event.kind === 'post' && fields[8] === 'o') event.topics = splitTopics(fields[9]);
  return event;
}
