/** What a holder (a connection, a cache, a client) has of a badge; a null epoch: nothing yet. */
export interface BadgeStamp {
  readonly epoch: string | null;
  readonly version: number;
}

/**
 * The one "is this badge newer" rule of the contract (docs/api.md): `next` replaces what is held
 * when nothing is held, when it is of another epoch (the stored state was lost and started over:
 * the new epoch wins whatever its version), or when its version is greater within the same epoch.
 * The SDK, which imports nothing, keeps a copy (packages/client/src/contract.ts) that a test
 * proves equal to this one.
 */
export function isNewerBadge(
  next: { readonly epoch: string; readonly version: number },
  held: BadgeStamp | null | undefined,
): boolean {
  return !held || isNewerState(next.epoch === held.epoch, next.version, held.version);
}

/**
 * isNewerBadge for a holder that keeps its stamp as fields (the gateway's hot path: a routed
 * change against a held user, a push against a socket), the epochs compared by the caller in
 * whatever form it has them (strings, epoch codes, or in place). Nothing held is another epoch.
 */
export function isNewerState(sameEpoch: boolean, version: number, heldVersion: number): boolean {
  return !sameEpoch || version > heldVersion;
}
