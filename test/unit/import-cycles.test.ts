/** scripts/import-cycles.ts, the circular-import check of `npm run lint`, on fixture trees. */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { findCycles, importGraph, runtimeImports } from '../../scripts/import-cycles.js';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '../..');
const SCRIPT = join(REPO, 'scripts/import-cycles.ts');
const TSX = join(REPO, 'node_modules/.bin/tsx');

const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

/** A repository-shaped tree: `{ 'packages/a/src/index.ts': '…' }`, plus package.json files. */
function tree(files: Record<string, string>, packages: Record<string, string> = {}): string {
  const root = mkdtempSync(join(tmpdir(), 'bubble-cycles-'));
  roots.push(root);
  const all = { ...files };
  for (const [dir, name] of Object.entries(packages)) {
    all[`packages/${dir}/package.json`] = JSON.stringify({ name });
  }
  for (const [path, text] of Object.entries(all)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

const cyclesIn = (root: string) =>
  findCycles(importGraph(root)).map((cycle) => cycle.map((file) => relative(root, file)));

describe('import-cycles', () => {
  it('finds a loop between two files and names it file by file', () => {
    const root = tree({
      'packages/a/src/index.ts': "export * from './one.js';\n",
      'packages/a/src/one.ts': "import { two } from './two.js';\nexport const one = () => two;\n",
      'packages/a/src/two.ts': "import { one } from './one.js';\nexport const two = () => one;\n",
    });
    expect(cyclesIn(root)).toEqual([
      ['packages/a/src/one.ts', 'packages/a/src/two.ts', 'packages/a/src/one.ts'],
    ]);
  });

  it('finds a longer loop, a file importing itself, and one loop per tangle', () => {
    const root = tree({
      'test/a.ts': "import './b.js';\n",
      'test/b.ts': "export { c } from './c.js';\n",
      'test/c.ts': "import './a.js';\nexport const c = 1;\n",
      'test/self.ts': "import './self.js';\n",
      'test/leaf.ts': "import './a.js';\n",
    });
    const cycles = cyclesIn(root).sort((x, y) => x.length - y.length);
    expect(cycles).toEqual([
      ['test/self.ts', 'test/self.ts'],
      ['test/a.ts', 'test/b.ts', 'test/c.ts', 'test/a.ts'],
    ]);
  });

  it('follows workspace package names to their src/index.ts', () => {
    const root = tree(
      {
        'packages/a/src/index.ts': "import { b } from '@x/b';\nexport const a = b;\n",
        'packages/b/src/index.ts': "export * from './inner.js';\n",
        'packages/b/src/inner.ts': "import { a } from '@x/a';\nexport const b = () => a;\n",
      },
      { a: '@x/a', b: '@x/b' },
    );
    expect(cyclesIn(root)).toEqual([
      [
        'packages/a/src/index.ts',
        'packages/b/src/index.ts',
        'packages/b/src/inner.ts',
        'packages/a/src/index.ts',
      ],
    ]);
  });

  it('leaves out imports the compiler erases, dynamic imports and outside modules', () => {
    expect(
      runtimeImports(
        'x.ts',
        [
          "import type { A } from './a.js';",
          "export type { B } from './b.js';",
          "import { type C } from './c.js';",
          "import ioredis from 'ioredis';",
          "export * from './d.js';",
          "const e = await import('./e.js');",
        ].join('\n'),
      ),
    ).toEqual(['./c.js', 'ioredis', './d.js']);
    const root = tree({
      'test/a.ts': "import type { B } from './b.js';\nexport type A = B;\n",
      'test/b.ts': "import type { A } from './a.js';\nexport type B = A | 1;\n",
      'test/c.ts': "export const c = () => import('./d.js');\n",
      'test/d.ts': "import { c } from './c.js';\nexport const d = c;\n",
    });
    expect(cyclesIn(root)).toEqual([]);
  });

  it('exits 1 and prints the loop on a cycle', () => {
    const root = tree({
      'test/a.ts': "import './b.js';\n",
      'test/b.ts': "import './a.js';\n",
    });
    let failure: { status: number; stderr: string } | undefined;
    try {
      execFileSync(TSX, [SCRIPT, root], { encoding: 'utf8', stdio: 'pipe' });
    } catch (err) {
      failure = err as { status: number; stderr: string };
    }
    expect(failure?.status).toBe(1);
    expect(failure?.stderr).toContain('import cycle: test/a.ts → test/b.ts → test/a.ts');
  }, 60_000);

  it('finds none in this repository', () => {
    expect(findCycles(importGraph(REPO))).toEqual([]);
  });
});
