import { INGEST_GROUP, streamIdMs } from '@bubble/store';
import { Redis } from 'ioredis';
import { sleep } from './live-stack.js';

/**
 * The consumer group's backlog, read from Redis itself (not from the gateway's metrics):
 * `XINFO GROUPS` for the last delivered id, `XPENDING` for the oldest pending entry and
 * `XRANGE (last-delivered` for the oldest entry not yet delivered.
 */
export class BacklogSampler {
  lastDelivered = '0-0';
  pending = 0;
  /** Entries appended and delivered to the group (`entries-read`). */
  delivered = 0;
  maxAgeMs = 0;
  maxUndelivered = 0;
  maxPending = 0;
  samples = 0;
  private running = false;

  constructor(
    private readonly redis: Redis,
    private readonly key: string,
  ) {}

  resetMax(): void {
    this.maxAgeMs = 0;
    this.maxUndelivered = 0;
    this.maxPending = 0;
    this.samples = 0;
  }

  async run(everyMs: number): Promise<void> {
    this.running = true;
    while (this.running) {
      await this.sample();
      await sleep(everyMs);
    }
  }

  stop(): void {
    this.running = false;
  }

  async sample(): Promise<void> {
    const now = Date.now();
    const groups = (await this.redis.xinfo('GROUPS', this.key).catch(() => [])) as unknown[][];
    const group = groups.map(fields).find((g) => g.name === INGEST_GROUP);
    if (!group) return;
    this.lastDelivered = String(group['last-delivered-id']);
    this.pending = Number(group.pending);
    this.delivered = Number(group['entries-read'] ?? 0);
    const lag = group.lag === null || group.lag === undefined ? 0 : Number(group.lag);
    const [summary, next] = await Promise.all([
      this.redis.xpending(this.key, INGEST_GROUP) as Promise<
        [number, string | null, string | null]
      >,
      this.redis.xrange(this.key, `(${this.lastDelivered}`, '+', 'COUNT', 1),
    ]);
    let oldest = Infinity;
    if (summary[1]) oldest = streamIdMs(summary[1]);
    if (next[0]) oldest = Math.min(oldest, streamIdMs(next[0][0]));
    this.samples++;
    if (oldest !== Infinity) this.maxAgeMs = Math.max(this.maxAgeMs, now - oldest);
    this.maxUndelivered = Math.max(this.maxUndelivered, lag);
    this.maxPending = Math.max(this.maxPending, this.pending);
  }
}

function fields(flat: unknown[]): Record<string, unknown> {
  const record: Record<string, unknown> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) record[String(flat[i])] = flat[i + 1];
  return record;
}
