/**
 * The dependency gate's checks on fixtures: exact pins, security floors over every installed
 * copy, the audit's outcome (also when the registry refuses it), and the licence allowlist.
 * The gate itself runs on the real tree in `.ci/run`; its last case runs it here too.
 */
import { describe, expect, it } from 'vitest';
import {
  belowFloors,
  compareVersions,
  licenceAllowed,
  manifests,
  readAudit,
  unpinned,
} from '../../scripts/dependency-gate.js';

describe('dependency gate', () => {
  it('flags ranges, tags and URLs, and a workspace package at another version', () => {
    const found = new Map([
      [
        'package.json',
        {
          name: 'root',
          devDependencies: { a: '1.2.3', b: '^1.2.3', c: '~1.0.0', d: 'latest', e: '1.0.0-rc.1' },
        },
      ],
      [
        'packages/x/package.json',
        {
          name: '@w/x',
          version: '0.1.0',
          dependencies: { '@w/y': '*', f: 'github:o/f', g: '>=2' },
        },
      ],
      ['packages/y/package.json', { name: '@w/y', version: '0.1.0' }],
    ]);
    const problems = unpinned(found);
    expect(problems.map((p) => p.split(' is ')[0])).toEqual([
      'package.json: devDependencies.b',
      'package.json: devDependencies.c',
      'package.json: devDependencies.d',
      'packages/x/package.json: dependencies.@w/y',
      'packages/x/package.json: dependencies.f',
      'packages/x/package.json: dependencies.g',
    ]);
  });

  it('compares versions numerically, a pre-release below its release', () => {
    expect(compareVersions('8.21.0', '8.21.0')).toBe(0);
    expect(compareVersions('8.9.0', '8.21.0')).toBe(-1);
    expect(compareVersions('10.0.0', '8.21.0')).toBe(1);
    expect(compareVersions('8.21.0-beta.1', '8.21.0')).toBe(-1);
  });

  it('checks every installed copy against its floor, nested ones too', () => {
    const lock = {
      packages: {
        '': { version: '0.1.0' },
        'node_modules/ws': { version: '8.23.0' },
        'node_modules/socket.io/node_modules/ws': { version: '8.17.1' },
        'node_modules/ws-extra': { version: '1.0.0' },
      },
    };
    expect(belowFloors(lock, { ws: '8.21.0' })).toEqual([
      'node_modules/socket.io/node_modules/ws is 8.17.1; security needs ≥ 8.21.0',
    ]);
  });

  it('reads an audit report, and says why when the registry refused it', () => {
    const report = JSON.stringify({
      metadata: { vulnerabilities: { low: 1, moderate: 0, high: 2, critical: 1 } },
    });
    expect(readAudit(report, '')).toMatchObject({ ran: true, failing: 3 });
    const refused = JSON.stringify({
      message:
        '405 Method Not Allowed - POST https://registry.npmjs.org/-/npm/v1/security/advisories/bulk',
      error: { summary: '', detail: '' },
    });
    expect(readAudit(refused, '')).toEqual({
      ran: false,
      reason: expect.stringContaining('405 Method Not Allowed'),
    });
    expect(readAudit('', 'npm error code ENOTFOUND\n')).toEqual({
      ran: false,
      reason: 'npm error code ENOTFOUND',
    });
  });

  it('allows the permissive licences, an OR with one of them, and nothing else', () => {
    expect(licenceAllowed('MIT')).toBe(true);
    expect(licenceAllowed('(MIT OR GPL-3.0)')).toBe(true);
    expect(licenceAllowed('MIT AND GPL-3.0')).toBe(false);
    expect(licenceAllowed('GPL-3.0')).toBe(false);
    expect(licenceAllowed('UNKNOWN')).toBe(false);
  });

  it('the tree as it is passes: every manifest pinned, ws above its floor', () => {
    const found = manifests(process.cwd());
    expect(found.size).toBeGreaterThan(5);
    expect(unpinned(found)).toEqual([]);
  });
});
