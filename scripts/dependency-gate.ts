/**
 * The dependency gate `.ci/run` runs before the tests:
 *
 *   tsx scripts/dependency-gate.ts [root]
 *
 * 1. Every dependency of every package.json is pinned to one exact version (no ranges, tags or
 *    URLs), and the workspace's own packages to the workspace's version.
 * 2. Every installed copy (package-lock.json) of a package with a security floor is at or above
 *    it: `ws` ≥ 8.21.0 (CVE-2024-37890 was fixed in 8.17.1; 8.21 bounds fragments).
 * 3. `npm audit --omit=dev`: a high or critical advisory fails the gate; when the registry does
 *    not answer the audit (a mirror that refuses it, no network) the gate says so plainly and
 *    goes on, since that is outside the project.
 * 4. The licences of the production dependencies are listed, and one outside the allowlist fails.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const SECURITY_FLOORS: Readonly<Record<string, string>> = { ws: '8.21.0' };

export const ALLOWED_LICENCES: ReadonlySet<string> = new Set([
  '0BSD',
  'Apache-2.0',
  'BSD-2-Clause',
  'BSD-3-Clause',
  'ISC',
  'MIT',
]);

const DEPENDENCY_FIELDS = [
  'dependencies',
  'devDependencies',
  'optionalDependencies',
  'peerDependencies',
] as const;

const EXACT_VERSION = /^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/;

interface PackageJson {
  name?: string;
  version?: string;
  license?: string;
  workspaces?: string[];
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}

function readJson<T>(path: string): T {
  return JSON.parse(readFileSync(path, 'utf8')) as T;
}

/** The manifests of the root and of every workspace, by path relative to the root. */
export function manifests(root: string): Map<string, PackageJson> {
  const rootManifest = readJson<PackageJson>(join(root, 'package.json'));
  const found = new Map<string, PackageJson>([['package.json', rootManifest]]);
  for (const workspace of rootManifest.workspaces ?? []) {
    const path = join(workspace, 'package.json');
    if (existsSync(join(root, path))) found.set(path, readJson<PackageJson>(join(root, path)));
  }
  return found;
}

/** Every dependency that is not pinned to one exact version, as "<file>: <field>.<name> <spec>". */
export function unpinned(found: ReadonlyMap<string, PackageJson>): string[] {
  const workspaceVersions = new Map<string, string>();
  for (const manifest of found.values()) {
    if (manifest.name && manifest.version) workspaceVersions.set(manifest.name, manifest.version);
  }
  const problems: string[] = [];
  for (const [file, manifest] of found) {
    for (const field of DEPENDENCY_FIELDS) {
      for (const [name, spec] of Object.entries(manifest[field] ?? {})) {
        const own = workspaceVersions.get(name);
        const ok = own === undefined ? EXACT_VERSION.test(spec) : spec === own;
        if (!ok) {
          const wanted = own === undefined ? 'an exact version' : `the workspace's ${own}`;
          problems.push(`${file}: ${field}.${name} is "${spec}", not ${wanted}`);
        }
      }
    }
  }
  return problems;
}

/** -1, 0 or 1 as `a` is below, equal to or above `b` (x.y.z; a pre-release sorts below). */
export function compareVersions(a: string, b: string): number {
  const parse = (v: string) => {
    const [core, pre] = v.split('-', 2) as [string, string | undefined];
    return { parts: core.split('.').map(Number), pre };
  };
  const x = parse(a);
  const y = parse(b);
  for (let i = 0; i < 3; i++) {
    const d = (x.parts[i] ?? 0) - (y.parts[i] ?? 0);
    if (d !== 0) return Math.sign(d);
  }
  if (x.pre === y.pre) return 0;
  if (x.pre === undefined) return 1;
  if (y.pre === undefined) return -1;
  return x.pre < y.pre ? -1 : 1;
}

interface Lockfile {
  packages?: Record<string, { version?: string; link?: boolean }>;
}

/** Installed copies below their security floor, from the lockfile's package paths. */
export function belowFloors(
  lock: Lockfile,
  floors: Readonly<Record<string, string>> = SECURITY_FLOORS,
): string[] {
  const problems: string[] = [];
  for (const [path, entry] of Object.entries(lock.packages ?? {})) {
    const name = path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length);
    const floor = floors[name];
    if (!path.includes('node_modules/') || floor === undefined || entry.link) continue;
    if (!entry.version || compareVersions(entry.version, floor) < 0) {
      problems.push(`${path} is ${entry.version ?? 'unversioned'}; security needs ≥ ${floor}`);
    }
  }
  return problems;
}

export type AuditOutcome =
  { ran: true; counts: Record<string, number>; failing: number } | { ran: false; reason: string };

/** Reads `npm audit --json`'s output: counts by severity, or why the audit did not run. */
export function readAudit(stdout: string, stderr: string): AuditOutcome {
  let report: {
    metadata?: { vulnerabilities?: Record<string, number> };
    message?: string;
    error?: { summary?: string };
  };
  try {
    report = JSON.parse(stdout) as typeof report;
  } catch {
    return { ran: false, reason: firstLine(stderr) || 'npm audit printed no report' };
  }
  const counts = report.metadata?.vulnerabilities;
  if (!counts) {
    return {
      ran: false,
      reason:
        report.error?.summary ||
        report.message ||
        firstLine(stderr) ||
        'the registry gave no audit report',
    };
  }
  return { ran: true, counts, failing: (counts.high ?? 0) + (counts.critical ?? 0) };
}

function firstLine(text: string): string {
  return (
    text
      .split('\n')
      .map((line) => line.trim())
      .find((line) => line !== '') ?? ''
  );
}

/** name@version → licence of every production dependency outside the workspace. */
export function productionLicences(root: string): Map<string, string> {
  const listed = spawnSync('npm', ['ls', '--omit=dev', '--all', '--parseable'], {
    cwd: root,
    encoding: 'utf8',
  });
  const workspace = new Set(
    [...manifests(root).values()].map((manifest) => manifest.name).filter(Boolean),
  );
  const licences = new Map<string, string>();
  for (const dir of listed.stdout.split('\n').slice(1)) {
    if (dir.trim() === '' || !existsSync(join(dir, 'package.json'))) continue;
    const manifest = readJson<PackageJson & { licenses?: { type?: string }[] }>(
      join(dir, 'package.json'),
    );
    if (!manifest.name || workspace.has(manifest.name)) continue;
    const licence =
      manifest.license ?? manifest.licenses?.map((entry) => entry.type).join(' OR ') ?? 'UNKNOWN';
    licences.set(`${manifest.name}@${manifest.version ?? '?'}`, licence);
  }
  return licences;
}

/** Whether an SPDX expression is satisfied by the allowlist (any alternative of an OR). */
export function licenceAllowed(expression: string): boolean {
  const alternatives = expression.replace(/[()]/g, '').split(/\s+OR\s+/);
  return alternatives.some((alternative) =>
    alternative.split(/\s+AND\s+/).every((part) => ALLOWED_LICENCES.has(part.trim())),
  );
}

function main(): void {
  const root = resolve(process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), '..'));
  const failures: string[] = [];

  const found = manifests(root);
  const pins = unpinned(found);
  failures.push(...pins);
  console.log(`dependency-gate: pins: ${found.size} manifests, ${pins.length} not exact`);

  const floors = belowFloors(readJson<Lockfile>(join(root, 'package-lock.json')));
  failures.push(...floors);
  const floorList = Object.entries(SECURITY_FLOORS).map(([name, v]) => `${name} ≥ ${v}`);
  console.log(
    `dependency-gate: floors (${floorList.join(', ')}): ${floors.length} copies below them`,
  );

  const audit = spawnSync('npm', ['audit', '--omit=dev', '--json'], {
    cwd: root,
    encoding: 'utf8',
    timeout: 120_000,
  });
  const outcome = readAudit(audit.stdout ?? '', audit.stderr ?? '');
  if (outcome.ran) {
    const summary = Object.entries(outcome.counts)
      .map(([severity, n]) => `${severity} ${n}`)
      .join(', ');
    console.log(`dependency-gate: npm audit --omit=dev: ${summary}`);
    if (outcome.failing > 0) {
      failures.push(`npm audit: ${outcome.failing} high or critical advisories (npm audit)`);
    }
  } else {
    console.log(
      `dependency-gate: npm audit --omit=dev COULD NOT RUN (${outcome.reason}): ` +
        'the advisories were not checked in this run',
    );
  }

  const licences = productionLicences(root);
  const byLicence = new Map<string, string[]>();
  for (const [pkg, licence] of licences) {
    byLicence.set(licence, [...(byLicence.get(licence) ?? []), pkg]);
    if (!licenceAllowed(licence)) failures.push(`${pkg} is licensed ${licence}, not allowed`);
  }
  console.log(`dependency-gate: licences of ${licences.size} production dependencies:`);
  for (const [licence, pkgs] of [...byLicence].sort(([a], [b]) => a.localeCompare(b))) {
    console.log(`  ${licence} (${pkgs.length}): ${pkgs.sort().join(', ')}`);
  }

  for (const failure of failures) console.error(`dependency-gate: ${failure}`);
  if (failures.length > 0) process.exitCode = 1;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
