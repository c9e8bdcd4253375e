/**
 * Preloaded (`node --expose-gc --import`) into the gateway child of the connections scenario.
 * On SIGUSR2 it collects garbage and appends one JSON line of process.memoryUsage() to
 * $BUBBLE_BENCH_MEMORY_PROBE, so memory is compared without the garbage of the moment; then,
 * for comparison, the same after V8's most thorough collection (it compacts every page and gives
 * memory back). It only observes: nothing the gateway does changes.
 */
import { appendFileSync } from 'node:fs';

const file = process.env.BUBBLE_BENCH_MEMORY_PROBE;

type Gc = (options?: { type: string; execution: string; flavor?: string }) => void;

if (file) {
  process.on('SIGUSR2', () => {
    const gc = (globalThis as { gc?: Gc }).gc;
    gc?.();
    // A second collection after finalizers had their turn.
    setTimeout(() => {
      gc?.();
      const usage = process.memoryUsage();
      let thorough: NodeJS.MemoryUsage | null = null;
      try {
        gc?.({ type: 'major', execution: 'sync', flavor: 'last-resort' });
        thorough = gc ? process.memoryUsage() : null;
      } catch {
        thorough = null;
      }
      appendFileSync(file, `${JSON.stringify({ ...usage, gc: gc !== undefined, thorough })}\n`);
    }, 300);
  });
}
