/**
 * The built CLI the process tests run (bin/bubble.js runs dist/): `npx tsc -b` once per vitest
 * run, whichever test file asks first.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { waitFor } from '@bubble/test-utils';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

const BUILD_LOCK = path.join(
  tmpdir(),
  `bubble-cluster-build-${Buffer.from(ROOT).toString('hex').slice(-24)}.lock`,
);

/** Holds the pid of the vitest run (the workers' parent) that built last. */
const BUILD_STAMP = `${BUILD_LOCK.slice(0, -'.lock'.length)}.built`;

/**
 * `npx tsc -b` (incremental) once per vitest run: the test files run in worker processes of
 * one parent, serialised by a lock dir (concurrent builds of one tree would write
 * the same outputs); the first builds, the others see its stamp.
 */
export async function buildOnce(): Promise<void> {
  await waitFor(
    () => {
      try {
        mkdirSync(BUILD_LOCK);
        return true;
      } catch {
        // A lock left by a killed run is stale after two minutes.
        try {
          if (Date.now() - statSync(BUILD_LOCK).mtimeMs > 120_000)
            rmSync(BUILD_LOCK, { recursive: true });
        } catch {
          // gone meanwhile
        }
        return false;
      }
    },
    { timeoutMs: 240_000, intervalMs: 100, message: 'the build lock was never free' },
  );
  try {
    if (readStamp() === String(process.ppid)) return;
    // Other work may be mid-edit in packages/: a failing build is retried for a while.
    let failure = '';
    await waitFor(
      () => {
        try {
          execFileSync('npx', ['tsc', '-b'], { cwd: ROOT, stdio: 'pipe', timeout: 240_000 });
          return true;
        } catch (err) {
          const output = err as { stdout?: Buffer; stderr?: Buffer };
          failure = `${output.stdout?.toString()}${output.stderr?.toString()}`;
          return false;
        }
      },
      { timeoutMs: 60_000, intervalMs: 2_000 },
    ).catch(() => {
      throw new Error(`tsc -b failed:\n${failure}`);
    });
    writeFileSync(BUILD_STAMP, String(process.ppid));
  } finally {
    rmSync(BUILD_LOCK, { recursive: true, force: true });
  }
}

function readStamp(): string | undefined {
  try {
    return readFileSync(BUILD_STAMP, 'utf8');
  } catch {
    return undefined;
  }
}
