import { poolOf, usersByPool } from '@bubble/protocol';
import { marksEventsByPool, type PoolEvent } from '@bubble/store';
import type { BadgeContext } from './context.js';

/**
 * How the badges layer tells the cores that a user's inputs changed: events in the user's pool
 * log, which the pool's owner reads at its next sweep and reloads the user from.
 */

export function userPool(ctx: BadgeContext, user: string): number {
  return poolOf(user, ctx.store.pools);
}

export async function appendUserEvents(
  ctx: BadgeContext,
  user: string,
  events: PoolEvent[],
): Promise<void> {
  await ctx.store.changes.appendPoolEvents(userPool(ctx, user), events);
}

export async function followsChanged(ctx: BadgeContext, user: string): Promise<void> {
  await appendUserEvents(ctx, user, [{ kind: 'follows', user }]);
}

/** Tells the pools of `users` to reload their marks and conversations: one call per pool. */
export async function marksChanged(ctx: BadgeContext, users: readonly string[]): Promise<void> {
  const byPool = marksEventsByPool(users, ctx.store.pools);
  await Promise.all(
    [...byPool].map(([pool, events]) => ctx.store.changes.appendPoolEvents(pool, events)),
  );
}

/** Tells the pools of `users` to reload their interaction counters: one call per pool. */
export async function countersChanged(ctx: BadgeContext, users: readonly string[]): Promise<void> {
  await Promise.all(
    [...usersByPool(users, ctx.store.pools)].map(([pool, list]) =>
      ctx.store.changes.appendPoolEvents(
        pool,
        list.map((user) => ({ kind: 'counters', user })),
      ),
    ),
  );
}
