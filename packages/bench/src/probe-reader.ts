import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { SweepReport } from '@bubble/protocol';
import { exitText, type RoleProcess } from '@bubble/test-utils';
import { spawnRole } from './children.js';

/** One line of the core's probe: its SweepReport and the commands it sent for that sweep. */
export interface ProbeRecord {
  report: SweepReport;
  commands: number;
  byName: Record<string, number>;
}

/** Reads the probe's JSON lines as the core appends them. */
export class ProbeReader {
  private offset = 0;
  private pending: ProbeRecord[] = [];

  constructor(
    private readonly file: string,
    private readonly children: readonly RoleProcess[],
    readonly corePid: number,
  ) {}

  /** Records appended since the last call. */
  private async poll(): Promise<ProbeRecord[]> {
    for (const child of this.children) {
      if (child.exit) {
        throw new Error(`a bubble child exited (${exitText(child.exit)}):\n${child.tail()}`);
      }
    }
    let text: string;
    try {
      text = await readFile(this.file, 'utf8');
    } catch {
      return [];
    }
    const end = text.lastIndexOf('\n') + 1;
    if (end <= this.offset) return [];
    const lines = text.slice(this.offset, end).split('\n');
    this.offset = end;
    return lines.filter((l) => l !== '').map((l) => JSON.parse(l) as ProbeRecord);
  }

  private async next(deadline: number): Promise<ProbeRecord | null> {
    while (this.pending.length === 0) {
      if (performance.now() > deadline) return null;
      this.pending.push(...(await this.poll()));
      if (this.pending.length === 0) await sleep(100);
    }
    return this.pending.shift()!;
  }

  /** Every record appended since the last call, without waiting. */
  async drain(): Promise<ProbeRecord[]> {
    const records = [...this.pending, ...(await this.poll())];
    this.pending = [];
    return records;
  }

  /** Drops what was recorded so far and the next `count` sweeps. */
  async skip(count: number, seconds: number): Promise<void> {
    this.pending = [];
    await this.poll();
    const deadline = performance.now() + seconds * 1000;
    for (let i = 0; i < count; i++) {
      if (!(await this.next(deadline))) throw new Error(`no sweep reported within ${seconds} s`);
    }
  }

  /** The next `count` sweeps, or those reported within `seconds`. */
  async collect(count: number, seconds: number): Promise<ProbeRecord[]> {
    const deadline = performance.now() + seconds * 1000;
    const records: ProbeRecord[] = [];
    while (records.length < count) {
      const record = await this.next(deadline);
      if (!record) break;
      records.push(record);
    }
    if (records.length < 2) throw new Error(`only ${records.length} sweeps within ${seconds} s`);
    return records;
  }

  /** Waits (a minute at most) until the core's sweeps cover all `pools`. */
  holdsPools(pools: number, log: (line: string) => void): Promise<ProbeRecord> {
    return this.waitFor(
      (r) => r.report.pools === pools,
      60,
      (r) => `core holds ${r.report.pools} pools`,
      log,
    );
  }

  async waitFor(
    done: (r: ProbeRecord) => boolean,
    seconds: number,
    describe: (r: ProbeRecord) => string,
    log: (line: string) => void,
  ): Promise<ProbeRecord> {
    const deadline = performance.now() + seconds * 1000;
    let last: ProbeRecord | null = null;
    let lastLog = 0;
    for (;;) {
      const record = await this.next(deadline);
      if (!record) {
        const where = last ? describe(last) : 'no sweep reported';
        throw new Error(`the core did not load within ${seconds} s: ${where}`);
      }
      last = record;
      if (done(record)) return record;
      if (performance.now() - lastLog > 5000) {
        lastLog = performance.now();
        log(`sweep: ${describe(record)} (sweep ${record.report.durationMs} ms)`);
      }
    }
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * `bubble core` with the sweep probe loaded (sweep-probe.ts), its records in `dir`, added to
 * `children`; the reader fails once any of them (added later too) has exited.
 */
export async function spawnProbedCore(options: {
  dir: string;
  env: Record<string, string>;
  nodeArgs: string[];
  children: RoleProcess[];
  log: (line: string) => void;
}): Promise<{ core: RoleProcess; probe: ProbeReader }> {
  const file = path.join(options.dir, 'probe.jsonl');
  const core = await spawnRole({
    role: 'core',
    env: { ...options.env, BUBBLE_BENCH_PROBE: file },
    nodeArgs: [...options.nodeArgs, '--import', new URL('./sweep-probe.js', import.meta.url).href],
    log: options.log,
  });
  options.children.push(core);
  return { core, probe: new ProbeReader(file, options.children, core.pid) };
}
