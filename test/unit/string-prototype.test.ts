/**
 * String.prototype stays a fast object in bubble's processes although ioredis, which they all
 * load, leaves it a dictionary (keepStringPrototypeFast says why). Checked in a node of its own
 * with V8's %HasFastProperties; the control shows the repair is still needed: when it fails, a
 * newer ioredis or V8 no longer slows strings down and the repair can go.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildOnce, ROOT } from '../support/build.js';

/** %HasFastProperties(String.prototype) in a node that has imported `specifier`. */
function fastAfterImporting(specifier: string): boolean {
  const script = `await import(${JSON.stringify(specifier)});
    console.log(JSON.stringify(%HasFastProperties(String.prototype)));`;
  const run = spawnSync(
    process.execPath,
    ['--allow-natives-syntax', '--input-type=module', '-e', script],
    { cwd: ROOT, encoding: 'utf8' },
  );
  expect(run.status, run.stderr).toBe(0);
  return JSON.parse(run.stdout) as boolean;
}

describe('String.prototype', () => {
  beforeAll(() => buildOnce(), 300_000);

  it('is left a dictionary by ioredis alone (the control)', () => {
    expect(fastAfterImporting('ioredis')).toBe(false);
  });

  it('is fast again once @bubble/store is loaded, and in a process that runs the roles', () => {
    expect(fastAfterImporting('@bubble/store')).toBe(true);
    expect(fastAfterImporting(path.join(ROOT, 'packages/cli/dist/roles/roles.js'))).toBe(true);
  });
});
