import { assertId } from '@bubble/protocol';
import type { BadgeContext } from './context.js';
import { assertPositiveId } from './validation.js';

/**
 * System notices and red dots: sources every user shares. O(1) writes whatever the number of
 * users; the cores follow the shared log.
 */
export class SharedSources {
  constructor(private readonly ctx: BadgeContext) {}

  async publishNotice(id: number, ts?: number): Promise<void> {
    assertPositiveId(id, 'notice id');
    const { store, clock } = this.ctx;
    if (await store.notices.publish(id, ts ?? clock.now())) {
      await store.changes.appendSharedEvents([{ kind: 'notice', id, live: true }]);
    }
  }

  async withdrawNotice(id: number): Promise<void> {
    assertPositiveId(id, 'notice id');
    const { store } = this.ctx;
    if (await store.notices.withdraw(id)) {
      await store.changes.appendSharedEvents([{ kind: 'notice', id, live: false }]);
    }
  }

  async markReddot(name: string, ts?: number): Promise<void> {
    assertId(name, 'red dot');
    const { store, clock } = this.ctx;
    const at = ts ?? clock.now();
    await store.reddots.mark(name, at);
    await store.changes.appendSharedEvents([{ kind: 'reddot', name, ts: at }]);
  }

  async clearReddot(name: string): Promise<void> {
    assertId(name, 'red dot');
    const { store } = this.ctx;
    if (await store.reddots.clear(name)) {
      await store.changes.appendSharedEvents([{ kind: 'reddot', name, ts: null }]);
    }
  }
}
