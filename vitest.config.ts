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
    projects: [
      {
        resolve: { alias },
        test: {
          name: 'unit',
          include: ['packages/*/src/**/*.test.ts', 'test/unit/**/*.test.ts'],
          environment: 'node',
        },
      },
      {
        resolve: { alias },
        test: {
          name: 'integration',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, 'test/unit/**'],
          environment: 'node',
          pool: 'forks',
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
    ],
  },
});
