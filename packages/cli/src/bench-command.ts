import {
  benchColdStart,
  benchCompute,
  benchConnections,
  benchFanout,
  benchIngest,
  benchLatency,
  benchPoll,
  benchSweep,
  benchWsCeiling,
} from '@bubble/bench';

type Scenario = () => Promise<Record<string, unknown>>;

const log = (line: string) => process.stderr.write(`${line}\n`);

/**
 * Set BUBBLE_BENCH_CPU_PROF to a directory and the live scenarios (latency, connections, poll,
 * ingest) start their bubble children with `node --cpu-prof` writing there, and list the hot
 * spots when they end. BUBBLE_BENCH_ACTIVITY=independent makes `latency` draw who posts
 * independently of who is followed (docs/benchmarks.md).
 */
const profileDir = process.env.BUBBLE_BENCH_CPU_PROF || undefined;

/** bench.md's scenarios by id; each prints progress on stderr and one JSON line on stdout. */
export const SCENARIOS: Record<string, Scenario> = {
  compute: () => benchCompute({ log }),
  'cold-start': () => benchColdStart({ log }),
  sweep: () => benchSweep({ log }),
  fanout: () => benchFanout({ log }),
  latency: () =>
    benchLatency({
      log,
      profileDir,
      // A diagnostic: the table's figure is the default, `popularity`.
      ...(process.env.BUBBLE_BENCH_ACTIVITY === 'independent'
        ? { activity: 'independent' as const }
        : {}),
    }),
  connections: () => benchConnections({ log, profileDir }),
  poll: () => benchPoll({ log, profileDir }),
  ingest: () => benchIngest({ log, profileDir }),
  'ws-ceiling': () => benchWsCeiling({ log }),
};

export async function runBench(names: string[]): Promise<void> {
  const unknown = names.filter((name) => !(name in SCENARIOS));
  if (unknown.length > 0) {
    throw new Error(
      `unknown scenario ${unknown.join(', ')}; choose from ${Object.keys(SCENARIOS).join(', ')}`,
    );
  }
  for (const name of names.length > 0 ? names : Object.keys(SCENARIOS)) {
    const figures = await SCENARIOS[name]!();
    process.stdout.write(`${JSON.stringify({ ...figures, machine: machine(figures.machine) })}\n`);
  }
}

function machine(scenario: unknown) {
  return {
    ...(typeof scenario === 'object' && scenario !== null ? scenario : {}),
    node: process.version,
    platform: process.platform,
    arch: process.arch,
  };
}
