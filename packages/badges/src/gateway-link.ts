import type { BadgeChange, BadgeChangeReader } from '@bubble/protocol';
import type { BubbleStore, MissedMessages, MissedReason } from '@bubble/store';

/** Why a gateway's subscription takes messages to it for lost (MissedMessages.onMissed). */
export type { MissedReason };

/**
 * What a gateway needs of the store beside the use cases: the live routes and presence of the
 * users it holds, and whether the store answers. The gateway reaches the store through this
 * alone. A held user is routed to the gateway and online together, and goes offline only when
 * no gateway holds them any more.
 */
export interface GatewayLink {
  /**
   * Receives the badge changes routed to `gatewayId` (its held users'), from every pool, and
   * with `missed` hears of the pools whose messages may have been lost.
   */
  subscribe(
    gatewayId: string,
    onChanges: (changes: BadgeChangeReader) => void,
    missed?: MissedMessages,
  ): Promise<() => Promise<void>>;
  /**
   * Receives the held users whose conversation lists may have changed, routed to `gatewayId`
   * like their badge changes; `onLost` when signals may have been lost (a reconnection).
   */
  subscribeLists(
    gatewayId: string,
    onUsers: (users: string[]) => void,
    onLost?: () => void,
  ): Promise<() => Promise<void>>;
  /** The stored badge states of those of `users` that have one (one read per pool). */
  storedStates(users: readonly string[]): Promise<BadgeChange[]>;
  /** The number of pools users are hashed into (poolOf). */
  readonly pools: number;
  /**
   * Routes the users' changes to `gatewayId` and keeps them online, both for `ttlMs` from the
   * store's now: one round trip. Holding users again renews both.
   */
  hold(gatewayId: string, users: readonly string[], ttlMs: number): Promise<void>;
  /** Stops routing `user` to `gatewayId`; offline when no other gateway holds them. */
  release(gatewayId: string, user: string): Promise<void>;
  /** Resolves when the store answers (readiness, bubble_redis_up). */
  ping(): Promise<void>;
}

export function storeGatewayLink(store: BubbleStore): GatewayLink {
  return {
    subscribe: (gatewayId, onChanges, missed) =>
      store.fencedBadges.subscribeGateway(gatewayId, onChanges, missed),
    subscribeLists: (gatewayId, onUsers, onLost) =>
      store.fencedBadges.subscribeListSignals(gatewayId, onUsers, onLost),
    storedStates: (users) => store.fencedBadges.storedStates(users),
    pools: store.pools,
    async hold(gatewayId, users, ttlMs) {
      await Promise.all([
        store.fencedBadges.route(gatewayId, users, ttlMs),
        store.presence.setOnline(users.map((user) => ({ user, ttlMs }))),
      ]);
    },
    async release(gatewayId, user) {
      // Another device on another gateway, or a move, keeps the user online.
      const orphaned = await store.fencedBadges.unroute(gatewayId, [user]);
      if (orphaned.length > 0) await store.presence.setOffline(user);
    },
    ping: () => store.ping(),
  };
}
