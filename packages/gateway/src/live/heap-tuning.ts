import { setFlagsFromString } from 'node:v8';

let applied = false;

/**
 * Turns off V8's allocation-site pretenuring in the process that holds the WebSockets.
 *
 * A gateway keeps a few kilobytes of small, long-lived objects per connection; everything else
 * it allocates (badge computations, Redis commands and replies, frames) dies soon. In a
 * reconnect storm hundreds of connects are in flight at once, so for a while most of that
 * short-lived data survives a scavenge or two; V8 takes such allocation sites for long-lived
 * and starts allocating their objects directly in the old generation, where they die right
 * away, interleaved with the connections' objects. The result is an old generation about twice
 * its live size that V8's compaction (a few megabytes per full collection) does not win back:
 * 166–188 MB committed for 82 MB live at 20k idle connections, against 128–140 MB without
 * pretenuring (docs/benchmarks.md, "connections"). Without pretenuring, objects are
 * promoted only by surviving scavenges, which costs some copying of the few that do live long.
 *
 * A flag of the V8 instance, read when allocation sites are judged at each scavenge, so setting
 * it at start-up, before any connection, takes effect. Called once by the WebSocket gateway.
 */
export function tuneHeapForConnections(): void {
  if (applied) return;
  applied = true;
  setFlagsFromString('--no-allocation-site-pretenuring');
}
