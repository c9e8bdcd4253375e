import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { configDefaults, defineConfig } from 'vitest/config';

// Tests import workspace packages straight from their TS sources, so no build is needed.
const workspacePackages = [
  'protocol',
  'store',
  'badges',
  'core',
  'server',
  'events',
  'gateway',
  'bench',
  'cli',
  'test-utils',
  'client',
] as const;

/**
 * The load tests (thousands of sockets, several processes each) run alone after the others,
 * so neither they nor the tests beside them measure a machine the other is loading.
 */
const LOAD_TESTS = ['test/ws/soak.test.ts', 'test/ws/reconnect-storm.test.ts'];

/**
 * Integration tests mostly wait on child processes, sockets and timers (a serial run used about a
 * third of one core), so they run more files at once than there are cores; vitest's default,
 * one less than the cores, ran them one at a time on two.
 */
const WORKERS = Math.max(3, availableParallelism() - 1);

const alias = Object.fromEntries(
  workspacePackages.map((name) => [
    `@bubble/${name}`,
    fileURLToPath(new URL(`./packages/${name}/src/index.ts`, import.meta.url)),
  ]),
);

export default defineConfig({
  // The global setup below imports workspace packages too.
  resolve: { alias },
  test: {
    // Vitest 4 picks the "agent" reporter when it detects an AI agent; always use the default one.
    reporters: ['default'],
    // Ends the run with the groups skipped for a missing program and the command that installs it.
    globalSetup: ['test/support/missing-tools-summary.ts'],
    maxWorkers: WORKERS,
    projects: [
      {
        resolve: { alias },
        test: {
          name: 'unit',
          include: ['packages/*/src/**/*.test.ts', 'test/unit/**/*.test.ts'],
          environment: 'node',
          // Property tests of hundreds of runs share the cores with integration files started
          // beside them: 5 s was seen to run out under that load. A guard, not a speed bar.
          testTimeout: 30_000,
        },
      },
      {
        resolve: { alias },
        test: {
          name: 'integration',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, 'test/unit/**', ...LOAD_TESTS],
          environment: 'node',
          pool: 'forks',
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        resolve: { alias },
        test: {
          name: 'load',
          include: LOAD_TESTS,
          environment: 'node',
          pool: 'forks',
          maxWorkers: 1,
          sequence: { groupOrder: 1 },
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
    ],
  },
});
