/**
 * Vitest global setup: after the run (and after every reporter's summary, whichever reporters
 * the command line chose), prints the groups skipped for a missing program and the one command
 * that installs what they need. Prints nothing when nothing was skipped.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { findExecutable } from '@bubble/test-utils';
import {
  SKIPPED_GROUPS_FILE_ENV,
  TOOL_PACKAGES,
  type SkippedGroup,
  type Tool,
} from './missing-tools.js';

export default function setup(): () => void {
  const dir = mkdtempSync(path.join(tmpdir(), 'bubble-skipped-'));
  const file = path.join(dir, 'groups.jsonl');
  // Workers start after global setup and inherit this environment.
  process.env[SKIPPED_GROUPS_FILE_ENV] = file;
  return () => {
    const groups = readGroups(file);
    rmSync(dir, { recursive: true, force: true });
    // Without redis-server the tests that start one fail rather than skip: say why.
    if (!findExecutable('redis-server')) {
      groups.push({
        tool: 'redis-server',
        file: 'test/**',
        group: 'every test that starts a Redis (they fail without it)',
      });
    }
    const summary = summarize(groups);
    if (summary) console.log(summary);
  };
}

function readGroups(file: string): SkippedGroup[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  return text
    .split('\n')
    .filter((line) => line.length > 0)
    .map((line) => JSON.parse(line) as SkippedGroup);
}

/** The lines to print for `groups` (each group once), or '' for none. */
export function summarize(groups: readonly SkippedGroup[]): string {
  const lines = [...new Set(groups.map((g) => `  ${g.tool}: ${g.file}: ${g.group}`))].sort();
  if (lines.length === 0) return '';
  const tools = [...new Set(groups.map((g) => g.tool))].sort() as Tool[];
  const packages = [...new Set(tools.map((tool) => TOOL_PACKAGES[tool]))];
  const sudo = process.getuid?.() === 0 ? '' : 'sudo ';
  return [
    '',
    `Not run for want of a program (${tools.join(', ')}):`,
    ...lines,
    `Install what they need with: ${sudo}apt-get install -y ${packages.join(' ')}`,
    '',
  ].join('\n');
}
