import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/**
 * Full garbage collections at moments of the core's choosing: right after a sweep, not in the
 * middle of one.
 *
 * A core's heap holds its users (tens of megabytes for 100k) and every sweep promotes a few
 * megabytes of what it allocated while it ran. V8 starts a full collection when the old
 * generation has grown by some tens of megabytes, wherever the process is; marking the users'
 * objects then slows the sweep it lands in by 100–200 ms (docs/benchmarks.md, "sweep"). After
 * a sweep the core has most of a tick with nothing to do, so it collects there, once the heap
 * 's old generation has grown by `growthBytes` since the last collection: V8's own trigger is then not reached.
 *
 * Uses `gc()`, exposed at run time; a process-wide setting, so only `bubble core` makes one.
 */
export class IdleCollector {
  private readonly collect: () => void;
  private baseline: number;
  private readonly growthBytes: number;
  collections = 0;

  constructor(options: { growthBytes?: number } = {}) {
    setFlagsFromString('--expose-gc');
    this.collect = runInNewContext('gc') as () => void;
    this.growthBytes = options.growthBytes ?? 24 * 1024 * 1024;
    this.baseline = oldGenerationBytes();
  }

  /** Collects if the heap grew by `growthBytes` since the last collection. */
  afterSweep(): void {
    const used = oldGenerationBytes();
    // A heap that shrank by itself (V8 collected anyway) moves the baseline down.
    if (used < this.baseline) this.baseline = used;
    if (used - this.baseline < this.growthBytes) return;
    this.collect();
    this.collections++;
    this.baseline = oldGenerationBytes();
  }
}

/** What survived into the old generation (the young one comes and goes with every scavenge). */
function oldGenerationBytes(): number {
  let bytes = 0;
  for (const space of getHeapSpaceStatistics()) {
    if (space.space_name === 'old_space' || space.space_name === 'large_object_space') {
      bytes += space.space_used_size;
    }
  }
  return bytes;
}
