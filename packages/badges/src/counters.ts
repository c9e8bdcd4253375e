import { BubbleError, assertId } from '@bubble/protocol';
import { MAX_WEBHOOK_ITEMS, type CounterEvent, type WebhookItem } from '@bubble/store';
import type { BadgeContext } from './context.js';
import { countersChanged } from './pool-events.js';

/**
 * Interaction counters (docs/semantics.md): the platform's events and retractions. Each call is
 * validated whole before the first write; the store stamps every event on its own clock. The
 * cores holding a user reload their counters from a `counters` event in the user's pool log,
 * appended after the write, also when it changed nothing (a retry of a call that failed after
 * its write then still tells them); offline delivery gets one job per user.
 */
export class Counters {
  constructor(private readonly ctx: BadgeContext) {}

  async ingest(events: readonly CounterEvent[]): Promise<{ accepted: number; ignored: number }> {
    for (const event of events) this.assertEvent(event);
    if (events.length === 0) return { accepted: 0, ignored: 0 };
    const { store, counters } = this.ctx;
    const result = await store.counters.ingest(events, counters.windowMs);
    await countersChanged(this.ctx, [...new Set(events.map((e) => e.user))]);
    const jobs = this.ctx.offlineJobs;
    if (jobs) {
      const byUser = new Map<string, WebhookItem[]>();
      for (const { user, kind, id } of events) {
        const items = byUser.get(user) ?? [];
        items.push({ kind: 'counter', counter: kind, id });
        byUser.set(user, items);
      }
      await Promise.all(
        [...byUser].map(([user, items]) =>
          jobs.append({
            kind: 'user',
            user,
            source: 'counters',
            items: items.slice(-MAX_WEBHOOK_ITEMS),
          }),
        ),
      );
    }
    return result;
  }

  async retract(event: CounterEvent): Promise<void> {
    this.assertEvent(event);
    await this.ctx.store.counters.retract(event, this.ctx.counters.windowMs);
    await countersChanged(this.ctx, [event.user]);
    await this.ctx.offlineJobs?.append({
      kind: 'user',
      user: event.user,
      source: 'counters',
      decrease: true,
    });
  }

  /** A 400 UB_ERR_BAD_REQUEST for a kind outside BUBBLE_COUNTER_KINDS. */
  assertKind(kind: string): void {
    assertId(kind, 'counter kind');
    if (!this.ctx.counters.kinds.includes(kind)) {
      throw new BubbleError(
        'UB_ERR_BAD_REQUEST',
        `unknown counter kind ${JSON.stringify(kind)}; the kinds are ${this.ctx.counters.kinds.join(', ')}`,
      );
    }
  }

  private assertEvent(event: CounterEvent): void {
    assertId(event.user, 'user');
    this.assertKind(event.kind);
    assertId(event.id, 'counter event id');
  }
}
