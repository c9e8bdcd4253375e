import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Shared Lua fragments, included as BullMQ's scripts include theirs: a line of its own
 * `--- @include "name"` stands for packages/store/lua/includes/name.lua, and the text Redis
 * runs has the fragment in that line's place. Fragments may include fragments. Each goes in
 * once per script, where it is first included (a second include of it would define its locals
 * again). An include cycle, a missing fragment or a malformed include line is an error.
 */
const INCLUDE_LINE = /^[ \t]*--+[ \t]*@include\b/;
const INCLUDE = /^--- @include "([a-z][A-Za-z0-9]*)"[ \t]*$/;

export class LuaIncludeError extends Error {
  override name = 'LuaIncludeError';
}

/** A fragment's text by name, or undefined when there is none. */
export type IncludeReader = (name: string) => string | undefined;

/**
 * `source` (the script file `origin`) with every include replaced by its fragment's text.
 * A script without includes comes back unchanged.
 */
export function flattenLua(source: string, origin: string, readInclude: IncludeReader): string {
  const included = new Set<string>();
  /** `chain`: the fragments being expanded, outermost first (none for the script itself). */
  const expand = (text: string, file: string, chain: readonly string[]): string =>
    text
      .split('\n')
      .flatMap((line, index) => {
        if (!INCLUDE_LINE.test(line)) return [line];
        const where = `${file}:${index + 1}`;
        const name = INCLUDE.exec(line)?.[1];
        if (name === undefined) {
          throw new LuaIncludeError(
            `${where}: an include is a line --- @include "name" (name [a-z][A-Za-z0-9]*), not ${line}`,
          );
        }
        if (chain.includes(name)) {
          const cycle = [...chain.slice(chain.indexOf(name)), name].map(includePath);
          throw new LuaIncludeError(`${where}: include cycle ${cycle.join(' → ')}`);
        }
        if (included.has(name)) return [];
        const fragment = readInclude(name);
        if (fragment === undefined) {
          throw new LuaIncludeError(`${where}: no fragment ${includePath(name)}`);
        }
        included.add(name);
        return [expand(fragment.replace(/\n$/, ''), includePath(name), [...chain, name])];
      })
      .join('\n');
  return expand(source, origin, []);
}

function includePath(name: string): string {
  return `includes/${name}.lua`;
}

/** Reads fragments from `<luaDir>/includes/`. */
export function includesIn(luaDir: string): IncludeReader {
  return (name) => {
    try {
      return readFileSync(join(luaDir, includePath(name)), 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
  };
}
