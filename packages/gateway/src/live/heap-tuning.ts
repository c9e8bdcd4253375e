import { performance } from 'node:perf_hooks';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';

/**
 * The young generation a gateway is started with: node's own flags, on its command line (V8
 * sizes the young generation when the process starts, and NODE_OPTIONS refuses the minimum).
 * Under pushes the gateway allocates about a kilobyte a frame that dies at once, and keeps each
 * user's latest badge for the quarter of a second until their next frame: with V8's default 16
 * MB semi-spaces a scavenge came every ~140 ms and copied those badges once or twice each; with
 * 64 MB, a quarter as often (docs/benchmarks.md, "The push path, third round"). The minimum is
 * the maximum so the young generation is whole from the start rather than grown under load.
 */
export const GATEWAY_NODE_FLAGS: readonly string[] = [
  '--min-semi-space-size=64',
  '--max-semi-space-size=64',
];

/** The semi-space GATEWAY_NODE_FLAGS ask for. */
const GATEWAY_SEMI_SPACE_BYTES = 64 * 2 ** 20;

/** What pretouchYoungGeneration found and did. */
export interface YoungGeneration {
  /** V8's new space as committed now (both semi-spaces once touched). */
  committedBytes: number;
  /** Whether it is what GATEWAY_NODE_FLAGS ask for. */
  sized: boolean;
  pretouchMs: number;
}

/**
 * Writes garbage through the young generation until both semi-spaces are resident, as a JVM's
 * AlwaysPreTouch does for its heap: the process holds at start the memory it will hold under
 * load (a 64 MB young generation: 128 MB, ~90 ms), so its RSS does not climb for minutes as
 * traffic first reaches each page, which a leak check cannot tell from a leak. A default young
 * generation (a megabyte at start) costs it nothing.
 */
export function pretouchYoungGeneration(): YoungGeneration {
  const started = performance.now();
  const initial = newSpace().space_size;
  let sink: unknown = null;
  for (let written = 0; written < 3 * initial && newSpace().physical_space_size < 2 * initial;) {
    for (let k = 0; k < 256; k++) sink = new Array(PRETOUCH_CHUNK);
    written += 256 * PRETOUCH_CHUNK * 8;
  }
  void sink;
  const committedBytes = newSpace().space_size;
  return {
    committedBytes,
    sized: initial >= GATEWAY_SEMI_SPACE_BYTES,
    pretouchMs: Math.round(performance.now() - started),
  };
}

/** Elements of each garbage array: 8 KB, far below V8's large-object size. */
const PRETOUCH_CHUNK = 1024;

function newSpace() {
  return getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')!;
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
