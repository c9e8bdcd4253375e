import { idRecord } from '@bubble/protocol';
import { sharedEventJson } from '../change-log/redis-change-log.js';
import { RedisLoggedWriter } from '../change-log/redis-logged-writer.js';
import type { RedDots } from './red-dots.js';

/** Red dots share the {g} slot with the shared log: each write logs itself. */
export class RedisRedDots extends RedisLoggedWriter implements RedDots {
  async mark(name: string, ts: number): Promise<void> {
    const { keys, log } = this;
    const event = sharedEventJson({ kind: 'reddot', name, ts });
    await this.run.markReddot(
      [keys.reddots(), keys.sharedEvents()],
      [name, ts, log.maxPostEvents, event],
    );
  }

  async clear(name: string): Promise<boolean> {
    const { keys, log } = this;
    const event = sharedEventJson({ kind: 'reddot', name, ts: null });
    const cleared = await this.run.clearReddot(
      [keys.reddots(), keys.sharedEvents()],
      [name, log.maxPostEvents, event],
    );
    return cleared === 1;
  }

  async all(): Promise<Record<string, number>> {
    const raw = await this.redis.hgetall(this.keys.reddots());
    const out = idRecord<number>();
    for (const [name, ts] of Object.entries(raw)) out[name] = Number(ts);
    return out;
  }
}
