/**
 * The programs beyond Node that parts of the suite run. A group that cannot run without one is
 * skipped (or runs a reduced form) and says so through `skippedWithout`; at the end of the run
 * test/support/missing-tools-summary.ts lists those groups and the one command that installs
 * what they need.
 */
import { appendFileSync } from 'node:fs';
import path from 'node:path';

/** Each program with the Debian package that installs it (.ci/run installs the same). */
export const TOOL_PACKAGES = {
  'redis-server': 'redis-server',
  chromium: 'chromium',
  'docker-compose': 'docker-compose',
  kubectl: 'kubectl',
  faketime: 'faketime',
  tini: 'tini',
  openssl: 'openssl',
  script: 'bsdutils',
} as const;

export type Tool = keyof typeof TOOL_PACKAGES;

/** One skipped group, as the worker that skipped it writes it down. */
export interface SkippedGroup {
  tool: Tool;
  file: string;
  group: string;
}

/** The file the workers append to (one JSON line per group); set by the summary's setup. */
export const SKIPPED_GROUPS_FILE_ENV = 'BUBBLE_TEST_SKIPPED_GROUPS_FILE';

/**
 * Whether `found` (the program's path, or whether it is there) is missing; when it is, `group`
 * of the calling test file is recorded as skipped for want of `tool`. Use in `skipIf`.
 */
export function skippedWithout(tool: Tool, found: unknown, group: string): boolean {
  if (found) return false;
  const out = process.env[SKIPPED_GROUPS_FILE_ENV];
  if (out) {
    const entry: SkippedGroup = { tool, file: callerTestFile(), group };
    appendFileSync(out, `${JSON.stringify(entry)}\n`);
  }
  return true;
}

/** The *.test.ts file below the caller on the stack, relative to the repository. */
function callerTestFile(): string {
  const stack = new Error().stack ?? '';
  const match = /([^\s(]+\.test\.ts)/.exec(stack);
  if (!match) return '(unknown file)';
  const file = match[1]!.replace(/^file:\/\//, '');
  return path.relative(process.cwd(), file);
}
