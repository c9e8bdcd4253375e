type Bench = typeof import('@bubble/bench');
type Scenario = (bench: Bench) => Promise<Record<string, unknown>>;

const log = (line: string) => process.stderr.write(`${line}\n`);

/**
 * Set BUBBLE_BENCH_CPU_PROF to a directory and the live scenarios (latency, connections, poll,
 * ingest, rehydrate's core) start their bubble children with `node --cpu-prof` writing there,
 * and list the hot spots when they end. BUBBLE_BENCH_ACTIVITY=independent makes `latency` draw
 * who posts independently of who is followed (docs/benchmarks.md).
 */
const profileDir = process.env.BUBBLE_BENCH_CPU_PROF || undefined;

/** bench.md's scenarios by id; each prints progress on stderr and one JSON line on stdout. */
export const SCENARIOS: Record<string, Scenario> = {
  compute: (bench) => bench.benchCompute({ log }),
  'cold-start': (bench) => bench.benchColdStart({ log }),
  sweep: (bench) => bench.benchSweep({ log }),
  'mass-offline': (bench) => bench.benchMassOffline({ log }),
  fanout: (bench) => bench.benchFanout({ log }),
  conversations: (bench) => bench.benchConversations({ log }),
  latency: (bench) =>
    bench.benchLatency({
      log,
      profileDir,
      // A diagnostic: the table's figure is the default, `popularity`.
      ...(process.env.BUBBLE_BENCH_ACTIVITY === 'independent'
        ? { activity: 'independent' as const }
        : {}),
    }),
  'latency-moderate': (bench) => bench.benchLatencyModerate({ log, profileDir }),
  'push-peers': (bench) => bench.benchPushPeers({ log, profileDir }),
  connections: (bench) => bench.benchConnections({ log, profileDir }),
  poll: (bench) => bench.benchPoll({ log, profileDir }),
  ingest: (bench) => bench.benchIngest({ log, profileDir }),
  'ingest-stream': (bench) => bench.benchIngestStream({ log, profileDir }),
  webhook: (bench) => bench.benchWebhook({ log, profileDir }),
  digest: (bench) =>
    bench.benchDigest({
      log,
      profileDir,
      ...benchNumber('BUBBLE_BENCH_DIGEST_USERS', 'users'),
      ...benchNumber('BUBBLE_BENCH_DIGEST_SECONDS', 'seconds'),
      ...benchNumber('BUBBLE_BENCH_DIGEST_GATEWAYS', 'gateways'),
      ...benchNumber('BUBBLE_DIGEST_RATE', 'rate'),
    }),
  sync: (bench) => bench.benchSync({ log, profileDir }),
  'ws-ceiling': (bench) => bench.benchWsCeiling({ log }),
  memory: (bench) => bench.benchMemory({ log }),
  // The same without a sources endpoint: follows kept in Redis, as before issue 36.
  'memory-no-sources': (bench) => bench.benchMemory({ log, sources: false }),
  rehydrate: (bench) => bench.benchRehydrate({ log, profileDir }),
  scale: (bench) => bench.benchScale({ log }),
  storm: (bench) =>
    bench.benchStorm({ log, ...benchNumber('BUBBLE_BENCH_STORM_CLIENTS', 'clients') }),
  soak: (bench) =>
    bench.benchSoak({
      log,
      ...benchNumber('BUBBLE_BENCH_SOAK_MINUTES', 'minutes'),
      ...benchNumber('BUBBLE_BENCH_SOAK_SOCKETS', 'sockets'),
      ...benchNumber('BUBBLE_BENCH_SOAK_POSTS', 'postsPerSecond'),
    }),
};

/** A scenario's size from the environment: BUBBLE_BENCH_SOAK_MINUTES, _SOCKETS, _POSTS, BUBBLE_BENCH_STORM_CLIENTS. */
function benchNumber(variable: string, option: string): Record<string, number> {
  const text = process.env[variable];
  if (text === undefined || text === '') return {};
  const value = Number(text);
  if (!(value > 0)) throw new Error(`${variable} must be a positive number (got ${text})`);
  return { [option]: value };
}

export async function runBench(names: string[]): Promise<void> {
  const unknown = names.filter((name) => !(name in SCENARIOS));
  if (unknown.length > 0) {
    throw new Error(
      `unknown scenario ${unknown.join(', ')}; choose from ${Object.keys(SCENARIOS).join(', ')}`,
    );
  }
  // Loaded only here: the bench package (and the test utilities it starts redis-servers with)
  // is a development tool, absent from a production install.
  const bench = await import('@bubble/bench').catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'ERR_MODULE_NOT_FOUND' || !/bubble\/bench|packages\/bench/.test(err.message))
      throw err;
    throw new Error(
      'bubble bench is not installed in this image (a production install leaves the bench package out); run it from a clone: npm ci && npm run bench',
    );
  });
  for (const name of names.length > 0 ? names : Object.keys(SCENARIOS)) {
    const figures = await SCENARIOS[name]!(bench);
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
