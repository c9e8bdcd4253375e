import { benchColdStart, benchCompute, benchFanout, benchSweep } from '@bubble/bench';

type Scenario = () => Promise<Record<string, unknown>>;

const log = (line: string) => process.stderr.write(`${line}\n`);

/** bench.md's scenarios by id; each prints progress on stderr and one JSON line on stdout. */
export const SCENARIOS: Record<string, Scenario> = {
  compute: () => benchCompute({ log }),
  'cold-start': () => benchColdStart({ log }),
  sweep: () => benchSweep({ log }),
  fanout: () => benchFanout({ log }),
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
    process.stdout.write(`${JSON.stringify({ ...figures, machine: machine() })}\n`);
  }
}

function machine() {
  return { node: process.version, platform: process.platform, arch: process.arch };
}
