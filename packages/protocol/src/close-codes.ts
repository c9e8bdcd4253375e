/**
 * The WebSocket close codes of the contract (docs/protocol.md "Close codes"): the one table the
 * gateway closes with and the tests expect. The SDK, which imports nothing, keeps a copy
 * (packages/client/src/contract.ts) that a test proves equal to this one.
 */
export const CLOSE = {
  /** The gateway is draining: reconnect at once (to another gateway). */
  goingAway: 1001,
  /** A frame that is not JSON, or of an unknown type, or a second `auth`. */
  policy: 1008,
  /** A frame larger than BUBBLE_WS_MAX_PAYLOAD. */
  tooLarge: 1009,
  /** Overloaded, or this connection could not keep up with its pushes: reconnect with backoff. */
  overloaded: 1013,
  /** Authentication failed or the token expired: get a new token, never retry the same one. */
  authFailed: 4401,
  /** Reserved by the contract; a disallowed Origin is refused earlier, 403 at the upgrade. */
  forbidden: 4403,
} as const;

/**
 * The codes after which the same client must not reconnect with the same credentials or
 * behaviour; every other code (1001, 1013, 1006 and any unlisted one) means reconnect.
 */
export const TERMINAL_CLOSE_CODES: ReadonlySet<number> = new Set<number>([
  CLOSE.policy,
  CLOSE.tooLarge,
  CLOSE.authFailed,
  CLOSE.forbidden,
]);
