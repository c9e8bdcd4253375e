import { readFile } from 'node:fs/promises';

/** One line of gateway-probe.ts: process.memoryUsage() after a forced GC. */
export interface ProcessMemorySample {
  rss: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  arrayBuffers: number;
  gc: boolean;
  /** After V8's last-resort collection, which compacts every page. */
  thorough: { rss: number; heapUsed: number; heapTotal: number } | null;
}

/**
 * Asks a child started with `--expose-gc --import gateway-probe.js` (and
 * BUBBLE_BENCH_MEMORY_PROBE=`file`) for its memory after a forced GC: SIGUSR2, then the line
 * it appends to `file`.
 */
export async function sampleProcessMemory(
  pid: number,
  file: string,
  seconds = 10,
): Promise<ProcessMemorySample> {
  const lines = async () =>
    (await readFile(file, 'utf8').catch(() => '')).split('\n').filter((l) => l !== '');
  const known = (await lines()).length;
  process.kill(pid, 'SIGUSR2');
  const deadline = performance.now() + seconds * 1000;
  while (performance.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    const all = await lines();
    if (all.length > known) return JSON.parse(all[all.length - 1]!) as ProcessMemorySample;
  }
  throw new Error(`process ${pid} did not report its memory within ${seconds} s`);
}
