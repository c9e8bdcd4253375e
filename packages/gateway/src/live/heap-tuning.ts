import { setFlagsFromString } from 'node:v8';

/**
 * The young generation a gateway should be started with (node's own flag: V8 sizes it when the
 * process starts, so it cannot be set from here). Under pushes the gateway allocates ~1 KB a
 * frame that dies at once, and keeps each user's latest badge for the quarter of a second
 * until their next frame: with the default 16 MB semi-spaces a scavenge came every ~140 ms and
 * copied those badges once or twice each; with 64 MB, a quarter as often. `bench latency`:
 * 13.0 against 14.7 µs of gateway CPU a frame (docs/benchmarks.md). Idle connections do not
 * grow it: V8 grows the young generation only as far as allocation asks.
 */
export const GATEWAY_YOUNG_GENERATION_FLAG = '--max-semi-space-size=64';

/** Whether node was started with a young generation size (on its command line or NODE_OPTIONS). */
export function youngGenerationSized(execArgv: readonly string[], nodeOptions = ''): boolean {
  const given = [...execArgv, ...nodeOptions.split(/\s+/)];
  return given.some((arg) => /^--max-semi-space-size(=|$)/.test(arg));
}

let applied = false;

/**
 * V8 settings for the process that holds the WebSockets: its heap should stay close to its live
 * size, which is mostly the connections.
 *
 * A gateway keeps a few kilobytes of small, long-lived objects per connection; everything else
 * it allocates (badge computations, Redis commands and replies, frames) dies soon. In a
 * reconnect storm hundreds of connects are in flight at once, so for a while much of that
 * short-lived data survives a scavenge or two and is promoted with the connections' objects,
 * then dies, leaving the old generation's pages half empty. V8's own compaction moves a few
 * megabytes per full collection, so the heap stayed about twice its live size for good: 164–188
 * MB committed for 82–94 MB live at 20k idle connections (docs/benchmarks.md, "connections").
 *
 * - No allocation-site pretenuring: V8 took the allocation sites of that in-flight data for
 *   long-lived and allocated their objects directly in the old generation, where they died at
 *   once. Without it, objects reach the old generation only by surviving scavenges. (The poll
 *   bench, whose 304s make short-lived garbage only, got faster, not slower.)
 * - Compaction at every full collection: the old generation is then as large as what lives in
 *   it. The price is the pause of a full collection, which moves every live object of the old
 *   generation; full collections are rare when the connections are idle, and without
 *   pretenuring rare under polls too.
 *
 * Flags of the whole V8 instance, read at each collection, so setting them at start-up (before
 * any connection) takes effect. Called once by `bubble gateway` (not by `bubble all`, whose
 * process also holds a core) unless BUBBLE_GATEWAY_HEAP_TUNING=0.
 */
export function tuneHeapForConnections(): void {
  if (applied) return;
  applied = true;
  setFlagsFromString('--no-allocation-site-pretenuring');
  setFlagsFromString('--compact-on-every-full-gc');
}
