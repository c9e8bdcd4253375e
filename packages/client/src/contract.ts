/**
 * Rules of the contract the SDK restates, because it imports nothing at run time:
 * test/unit/client-contract.test.ts proves each one equal to @bubble/protocol's.
 */

/** The WebSocket close codes (docs/protocol.md "Close codes"); @bubble/protocol's CLOSE. */
export const CLOSE = {
  goingAway: 1001,
  policy: 1008,
  tooLarge: 1009,
  overloaded: 1013,
  authFailed: 4401,
  forbidden: 4403,
} as const;

/**
 * The terminal close codes, with the error each stops the client with; 4401, terminal for the
 * token only, asks for a new one instead (with 4401, @bubble/protocol's TERMINAL_CLOSE_CODES).
 */
export const TERMINAL: Record<number, string> = {
  [CLOSE.policy]: 'policy-violation',
  [CLOSE.tooLarge]: 'frame-too-large',
  [CLOSE.forbidden]: 'origin-refused',
};

/**
 * Whether `next` replaces the badge held: nothing held, another epoch (the server's stored state
 * was lost), or a greater version in the same epoch; @bubble/protocol's isNewerBadge.
 */
export function isNewer(
  next: { readonly epoch: string; readonly version: number },
  held: { readonly epoch: string; readonly version: number } | undefined,
): boolean {
  return !held || held.epoch !== next.epoch || next.version > held.version;
}
