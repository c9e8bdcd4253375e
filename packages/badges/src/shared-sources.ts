import { assertId } from '@bubble/protocol';
import type { BadgeContext } from './context.js';
import { assertPositiveId } from './validation.js';

/**
 * System notices and red dots: sources every user shares. O(1) writes whatever the number of
 * users; the cores follow the shared log, which the store appends to in the step that writes,
 * and offline delivery gets one job per write.
 */
export class SharedSources {
  constructor(private readonly ctx: BadgeContext) {}

  async publishNotice(id: number, ts?: number): Promise<void> {
    assertPositiveId(id, 'notice id');
    const { store, clock } = this.ctx;
    await store.notices.publish(id, ts ?? clock.now());
    await this.ctx.offlineJobs?.append({ kind: 'notice', id });
  }

  async withdrawNotice(id: number): Promise<void> {
    assertPositiveId(id, 'notice id');
    await this.ctx.store.notices.withdraw(id);
    await this.ctx.offlineJobs?.append({ kind: 'notice', id, decrease: true });
  }

  async markReddot(name: string, ts?: number): Promise<void> {
    assertId(name, 'red dot');
    const { store, clock } = this.ctx;
    await store.reddots.mark(name, ts ?? clock.now());
    await this.ctx.offlineJobs?.append({ kind: 'reddot', name });
  }

  async clearReddot(name: string): Promise<void> {
    assertId(name, 'red dot');
    await this.ctx.store.reddots.clear(name);
    await this.ctx.offlineJobs?.append({ kind: 'reddot', name, decrease: true });
  }
}
