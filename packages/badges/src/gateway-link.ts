import type { BadgeChange, BubbleStore } from '@bubble/store';

/**
 * What a gateway needs of the store beside the use cases: the live routes and presence of the
 * users it holds, and whether the store answers. The gateway reaches the store through this
 * alone. A held user is routed to the gateway and online together, and goes offline only when
 * no gateway holds them any more.
 */
export interface GatewayLink {
  /** Receives the badge changes routed to `gatewayId` (its held users'), from every pool. */
  subscribe(
    gatewayId: string,
    onChanges: (changes: BadgeChange[]) => void,
  ): Promise<() => Promise<void>>;
  /**
   * Routes the users' changes to `gatewayId` and keeps them online, both until `now + ttlMs`:
   * one round trip. Holding users again renews both.
   */
  hold(gatewayId: string, users: readonly string[], ttlMs: number, now: number): Promise<void>;
  /** Stops routing `user` to `gatewayId`; offline when no other gateway holds them. */
  release(gatewayId: string, user: string, now: number): Promise<void>;
  /** Resolves when the store answers (readiness, bubble_redis_up). */
  ping(): Promise<void>;
}

export function storeGatewayLink(store: BubbleStore): GatewayLink {
  return {
    subscribe: (gatewayId, onChanges) => store.fencedBadges.subscribeGateway(gatewayId, onChanges),
    async hold(gatewayId, users, ttlMs, now) {
      await Promise.all([
        store.fencedBadges.route(gatewayId, users, ttlMs, now),
        store.presence.setOnline(
          users.map((user) => ({ user, ttlMs })),
          now,
        ),
      ]);
    },
    async release(gatewayId, user, now) {
      // Another device on another gateway, or a move, keeps the user online.
      const orphaned = await store.fencedBadges.unroute(gatewayId, [user], now);
      if (orphaned.length > 0) await store.presence.setOffline(user);
    },
    ping: () => store.ping(),
  };
}
