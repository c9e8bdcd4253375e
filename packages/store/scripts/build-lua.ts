/**
 * Writes every script of packages/store/lua that includes fragments, flattened as Redis runs
 * it, to packages/store/lua/flattened/ (the other scripts run as written). The files are
 * committed, so a review shows what changes in the text Redis runs, and `redis-cli --eval`
 * takes them. The store flattens with the same function when it loads the scripts, so nothing
 * needs this to run; `npm run build` writes them, and `npm run typecheck` (`--check`) and
 * test/unit/lua-includes.test.ts fail when they are out of date.
 *   tsx packages/store/scripts/build-lua.ts          write them
 *   tsx packages/store/scripts/build-lua.ts --check  exit 1 if one is out of date
 */
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadScripts } from '../src/redis/scripts.js';

export const LUA_DIR = fileURLToPath(new URL('../lua/', import.meta.url));
const FLATTENED = 'flattened';

/** File name → text for each script whose flattened text differs from its file. */
export function flattenedScripts(luaDir = LUA_DIR): Map<string, string> {
  const out = new Map<string, string>();
  for (const { file, lua } of loadScripts(luaDir)) {
    if (lua !== readFileSync(join(luaDir, file), 'utf8')) out.set(file, lua);
  }
  return out;
}

function written(dir: string): Map<string, string> {
  const files = new Map<string, string>();
  let names: string[] = [];
  try {
    names = readdirSync(dir);
  } catch {
    // not written yet
  }
  for (const name of names) files.set(name, readFileSync(join(dir, name), 'utf8'));
  return files;
}

/** What differs between the flattened directory and the scripts now: one line per file. */
export function outOfDate(luaDir = LUA_DIR): string[] {
  const dir = join(luaDir, FLATTENED);
  const expected = flattenedScripts(luaDir);
  const actual = written(dir);
  const problems: string[] = [];
  for (const [file, lua] of expected) {
    const current = actual.get(file);
    if (current === undefined) problems.push(`${FLATTENED}/${file} is missing`);
    else if (current !== lua) problems.push(`${FLATTENED}/${file} differs from ${file} flattened`);
  }
  for (const file of actual.keys()) {
    if (!expected.has(file)) problems.push(`${FLATTENED}/${file} has no script with includes`);
  }
  return problems;
}

/** Brings the flattened directory up to date; returns the files it wrote or removed. */
export function writeFlattened(luaDir = LUA_DIR): string[] {
  const dir = join(luaDir, FLATTENED);
  const expected = flattenedScripts(luaDir);
  const actual = written(dir);
  const changed: string[] = [];
  mkdirSync(dir, { recursive: true });
  for (const [file, lua] of expected) {
    if (actual.get(file) === lua) continue;
    writeFileSync(join(dir, file), lua);
    changed.push(file);
  }
  for (const file of actual.keys()) {
    if (expected.has(file)) continue;
    rmSync(join(dir, file));
    changed.push(file);
  }
  return changed;
}

function main(): void {
  const where = relative(process.cwd(), join(LUA_DIR, FLATTENED)) || '.';
  if (process.argv.includes('--check')) {
    const problems = outOfDate();
    if (problems.length > 0) {
      for (const problem of problems) console.error(`build-lua: ${problem}`);
      console.error(`build-lua: ${where} is out of date: run \`npm run build\` and commit it`);
      process.exitCode = 1;
    }
    return;
  }
  for (const file of writeFlattened()) console.log(`build-lua: ${where}/${file}`);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
