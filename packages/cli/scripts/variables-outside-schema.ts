/**
 * The environment variables read outside the roles' configuration schema (packages/cli/src/config.ts):
 * by the command-line tools, the benchmarks and the tests. They are not validated at start, so
 * they are not in the schema; build-config-docs.ts lists them after it, and its `--check` fails
 * when the code reads a variable that neither documents.
 */
export interface OutsideVariable {
  name: string;
  /** As it reads in the default column: backticks for a value, words for a behaviour. */
  default: string;
  description: string;
}

export interface OutsideGroup {
  title: string;
  description: string;
  variables: OutsideVariable[];
}

export const VARIABLES_OUTSIDE_SCHEMA: OutsideGroup[] = [
  {
    title: 'Command-line tools',
    description: 'Read by `bubble status` and `bubble simulate`, which talk to a running gateway.',
    variables: [
      {
        name: 'BUBBLE_URL',
        default: '`http://127.0.0.1:$PORT`',
        description:
          'the gateway `status` and `simulate` talk to (`--url` wins; http or https only); the key is `BUBBLE_API_KEY`, else the development secrets of `bubble all`',
      },
    ],
  },
  {
    title: 'Benchmarks',
    description: 'Read by `bubble bench` ([benchmarks.md](benchmarks.md)); never by a role.',
    variables: [
      {
        name: 'BUBBLE_BENCH_CPU_PROF',
        default: '—',
        description:
          'a directory: the live scenarios start their bubble children with `node --cpu-prof` writing there, and list the hot spots when they end',
      },
      {
        name: 'BUBBLE_BENCH_ACTIVITY',
        default: '`popularity`',
        description:
          '`independent`: `latency` draws who posts independently of who is followed (a diagnostic; the published figure is the default)',
      },
      {
        name: 'BUBBLE_BENCH_NO_RECONCILE',
        default: '`0`',
        description:
          "`1`: the benches' probed cores skip their per-sweep reconciliation, for diagnosis only",
      },
      {
        name: 'BUBBLE_BENCH_STORM_CLIENTS',
        default: '`10000`',
        description: 'clients of `bench storm`',
      },
      {
        name: 'BUBBLE_BENCH_SOAK_MINUTES',
        default: '`60`',
        description: 'how long `bench soak` runs, minutes',
      },
      {
        name: 'BUBBLE_BENCH_SOAK_SOCKETS',
        default: '`10000`',
        description: 'WebSocket clients of `bench soak`',
      },
      {
        name: 'BUBBLE_BENCH_SOAK_POSTS',
        default: '`200`',
        description: 'posts per second of `bench soak`',
      },
      {
        name: 'BUBBLE_BENCH_DIGEST_USERS',
        default: '`1000000`',
        description: 'offline users seen within `BUBBLE_DIGEST_DAYS` of `bench digest`',
      },
      {
        name: 'BUBBLE_BENCH_DIGEST_SECONDS',
        default: '`120`',
        description: 'how long `bench digest` measures, seconds (after its warm-up)',
      },
      {
        name: 'BUBBLE_BENCH_DIGEST_GATEWAYS',
        default: '`1`',
        description: 'gateways sharing the pass of `bench digest`',
      },
      {
        name: 'BUBBLE_BENCH_PROBE',
        default: '—',
        description:
          "set by the bench in a core child's environment: the file its sweep probe appends the sweep reports and command counts to",
      },
      {
        name: 'BUBBLE_BENCH_MEMORY_PROBE',
        default: '—',
        description:
          "set by the bench in a child's environment: the file its memory probe appends the process's memory to after a forced GC",
      },
    ],
  },
  {
    title: 'Tests',
    description: 'Read by the test suite (`npm test`) only.',
    variables: [
      {
        name: 'BUBBLE_DASHBOARD_SCREENSHOT',
        default: 'a temporary file',
        description:
          'where the dashboard test saves its screenshot (how `docs/images/dashboard.png` is made)',
      },
      {
        name: 'BUBBLE_DEMO_SCREENSHOTS',
        default: 'a temporary directory',
        description: 'where the demo page test saves its screenshots',
      },
      {
        name: 'CLUSTER_SEED',
        default: 'from the clock',
        description: 'seed of the cluster and failover tests, to replay a failing run',
      },
      {
        name: 'STORM_CLIENTS',
        default: '`2000`',
        description: 'clients of the reconnect-storm test',
      },
      {
        name: 'INGEST_PROPERTY_RUNS',
        default: '`100`',
        description: 'runs of the ingest stream property test',
      },
      {
        name: 'TEST_LOG_LEVEL',
        default: '`silent`',
        description: 'log level of the ingest stream tests',
      },
      {
        name: 'BUBBLE_TEST_SKIPPED_GROUPS_FILE',
        default: 'set by the suite',
        description:
          'where test files note the groups skipped for a missing program; `npm test` sets it and prints the list at the end',
      },
    ],
  },
];

/** Names in the code that look like variables but are not read from the environment. */
export const NOT_VARIABLES = new Set(['BUBBLE_BIN', 'PATH']);
