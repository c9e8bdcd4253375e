import { setFlagsFromString } from 'node:v8';

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
