import { CLOSE } from '@bubble/protocol';
import type { Logger } from 'pino';
import { WebSocket } from 'ws';

/**
 * A drain closes its sockets (1001) at most this many a second (BUBBLE_WS_DRAIN_RATE), and in at
 * most DEFAULT_DRAIN_MAX_MS in all (BUBBLE_WS_DRAIN_MAX_MS): the survivors see the clients come
 * at a rate they can admit, and a socket not yet closed keeps its pushes until its turn.
 */
export const DEFAULT_DRAIN_RATE = 2_000;
export const DEFAULT_DRAIN_MAX_MS = 5_000;
const DRAIN_SLICE_MS = 50;

/**
 * Closes every socket of `peers` with 1001, at most `rate` a second and all within `maxMs`:
 * until its turn a socket is served as before.
 */
export async function closePaced(
  peers: ReadonlySet<WebSocket>,
  rate: number,
  maxMs: number,
  log: Logger,
): Promise<void> {
  const due = [...peers];
  const spanMs = Math.min(maxMs, (due.length * 1000) / rate);
  log.info(
    { sockets: due.length, overMs: Math.round(spanMs) },
    'draining: closing sockets with 1001',
  );
  // Socket i is due at i/n of the span: a late timer catches up, it does not stretch the span.
  const started = performance.now();
  let next = 0;
  while (next < due.length) {
    const elapsed = performance.now() - started;
    const until =
      elapsed >= spanMs
        ? due.length
        : Math.min(due.length, Math.floor((elapsed / spanMs) * due.length) + 1);
    for (; next < until; next++) {
      const ws = due[next]!;
      if (ws.readyState === WebSocket.OPEN) ws.close(CLOSE.goingAway, 'draining');
    }
    if (next < due.length) await new Promise((resolve) => setTimeout(resolve, DRAIN_SLICE_MS));
  }
  // A connection whose upgrade was past the draining check when the drain began.
  for (const ws of peers) {
    if (ws.readyState === WebSocket.OPEN) ws.close(CLOSE.goingAway, 'draining');
  }
}
