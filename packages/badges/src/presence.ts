import { assertId } from '@bubble/protocol';
import type { ColdStart } from './cold-start.js';
import type { BadgeContext } from './context.js';

/** Presence as the platform sets it (POST /v1/presence). */
export class Presence {
  constructor(
    private readonly ctx: BadgeContext,
    private readonly coldStart: ColdStart,
  ) {}

  /**
   * Online for `ttlMs` from the store's now (or offline). A user coming online gets their badge computed
   * at once; their pool's core picks them up from the change log.
   */
  async setPresence(user: string, online: boolean, ttlMs: number): Promise<void> {
    assertId(user, 'user');
    const { store } = this.ctx;
    if (!online) {
      await store.presence.setOffline(user);
      return;
    }
    const [change] = await store.presence.setOnline([{ user, ttlMs }]);
    if (change?.changed) await this.coldStart.badge(user);
  }
}
