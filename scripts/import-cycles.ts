/**
 * Fails when the TypeScript sources import each other in a circle (`npm run lint` runs it).
 *
 *   tsx scripts/import-cycles.ts [root]
 *
 * The graph has one node per .ts file under packages/<name>/src and test/, and one edge per
 * static `import … from` or `export … from` that stays in the process at run time: `import type`
 * and `export type` are erased by the compiler and cannot close a loop while modules load, so
 * they are left out. Relative specifiers resolve the way NodeNext does (`./x.js` is `./x.ts`);
 * a workspace package (`@bubble/store`) resolves to its src/index.ts, so a loop that crosses
 * packages is found too. Specifiers that resolve to no source file (node_modules, JSON, Node's
 * own modules) are not part of the graph. Dynamic `import()` is not followed: it runs after
 * the importing module has loaded.
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

export type ImportGraph = Map<string, string[]>;

const SKIP_DIRS = new Set(['node_modules', 'dist', 'coverage']);

function sourceFiles(dir: string, out: string[] = []): string[] {
  if (!existsSync(dir)) return out;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (!SKIP_DIRS.has(entry.name)) sourceFiles(path, out);
    } else if (/\.m?ts$/.test(entry.name) && !/\.d\.m?ts$/.test(entry.name)) {
      out.push(path);
    }
  }
  return out;
}

/** The workspace packages under root/packages, by name, with their entry file. */
function workspacePackages(root: string): Map<string, string> {
  const packages = new Map<string, string>();
  const dir = join(root, 'packages');
  if (!existsSync(dir)) return packages;
  for (const name of readdirSync(dir)) {
    const manifest = join(dir, name, 'package.json');
    const entry = join(dir, name, 'src', 'index.ts');
    if (!existsSync(manifest) || !existsSync(entry)) continue;
    const { name: packageName } = JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string };
    if (packageName) packages.set(packageName, entry);
  }
  return packages;
}

function isFile(path: string): boolean {
  return existsSync(path) && statSync(path).isFile();
}

function resolveRelative(from: string, specifier: string): string | undefined {
  const base = resolve(dirname(from), specifier);
  const candidates = [
    base.replace(/\.js$/, '.ts').replace(/\.mjs$/, '.mts'),
    base,
    `${base}.ts`,
    join(base, 'index.ts'),
  ];
  return candidates.find((path) => /\.m?ts$/.test(path) && isFile(path));
}

/** The specifiers a file imports at run time (type-only imports and exports left out). */
export function runtimeImports(fileName: string, text: string): string[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, false);
  const specifiers: string[] = [];
  for (const statement of source.statements) {
    if (ts.isImportDeclaration(statement)) {
      if (statement.importClause?.isTypeOnly) continue;
      if (ts.isStringLiteral(statement.moduleSpecifier)) {
        specifiers.push(statement.moduleSpecifier.text);
      }
    } else if (ts.isExportDeclaration(statement)) {
      if (statement.isTypeOnly || !statement.moduleSpecifier) continue;
      if (ts.isStringLiteral(statement.moduleSpecifier)) {
        specifiers.push(statement.moduleSpecifier.text);
      }
    }
  }
  return specifiers;
}

/** The run-time import graph of the sources under root (see the file comment). */
export function importGraph(root: string): ImportGraph {
  const packages = workspacePackages(root);
  const files = [
    ...readdirSafe(join(root, 'packages')).flatMap((name) =>
      sourceFiles(join(root, 'packages', name, 'src')),
    ),
    ...sourceFiles(join(root, 'test')),
  ];
  const graph: ImportGraph = new Map();
  for (const file of files) {
    const edges = new Set<string>();
    for (const specifier of runtimeImports(file, readFileSync(file, 'utf8'))) {
      const target = specifier.startsWith('.')
        ? resolveRelative(file, specifier)
        : packages.get(specifier);
      if (target) edges.add(target);
    }
    graph.set(file, [...edges]);
  }
  return graph;
}

function readdirSafe(dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir) : [];
}

/**
 * One cycle per strongly connected component of more than one file (or a file that imports
 * itself), each as the list of files along it, the first repeated at the end.
 */
export function findCycles(graph: ImportGraph): string[][] {
  // Tarjan's algorithm, iterative so a deep graph cannot overflow the stack.
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const components: string[][] = [];
  const edgesOf = (node: string) => (graph.get(node) ?? []).filter((n) => graph.has(n));

  for (const start of graph.keys()) {
    if (index.has(start)) continue;
    const work: Array<{ node: string; next: number }> = [{ node: start, next: 0 }];
    index.set(start, counter);
    low.set(start, counter++);
    stack.push(start);
    onStack.add(start);
    while (work.length > 0) {
      const frame = work[work.length - 1]!;
      const edges = edgesOf(frame.node);
      if (frame.next < edges.length) {
        const to = edges[frame.next++]!;
        if (!index.has(to)) {
          index.set(to, counter);
          low.set(to, counter++);
          stack.push(to);
          onStack.add(to);
          work.push({ node: to, next: 0 });
        } else if (onStack.has(to)) {
          low.set(frame.node, Math.min(low.get(frame.node)!, index.get(to)!));
        }
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.node, Math.min(low.get(parent.node)!, low.get(frame.node)!));
      if (low.get(frame.node) === index.get(frame.node)) {
        const component: string[] = [];
        let node: string;
        do {
          node = stack.pop()!;
          onStack.delete(node);
          component.push(node);
        } while (node !== frame.node);
        if (component.length > 1 || edgesOf(frame.node).includes(frame.node)) {
          components.push(component);
        }
      }
    }
  }
  return components.map((component) => cycleWithin(graph, new Set(component)));
}

/** A shortest path from the component's first file back to itself, inside the component. */
function cycleWithin(graph: ImportGraph, members: Set<string>): string[] {
  const start = [...members].sort()[0]!;
  const previous = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const node = queue.shift()!;
    for (const to of graph.get(node) ?? []) {
      if (!members.has(to)) continue;
      if (to === start) {
        const back: string[] = [];
        for (let at = node; at !== start; at = previous.get(at)!) back.push(at);
        return [start, ...back.reverse(), start];
      }
      if (!previous.has(to)) {
        previous.set(to, node);
        queue.push(to);
      }
    }
  }
  return [start, start];
}

function main(): void {
  const root = resolve(process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), '..'));
  const graph = importGraph(root);
  const cycles = findCycles(graph);
  if (cycles.length === 0) {
    console.log(`import-cycles: no cycle among ${graph.size} files`);
    return;
  }
  for (const cycle of cycles) {
    console.error(`import cycle: ${cycle.map((file) => relative(root, file)).join(' → ')}`);
  }
  console.error(`import-cycles: ${cycles.length} cycle(s) among ${graph.size} files`);
  process.exitCode = 1;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
