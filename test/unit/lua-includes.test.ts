/**
 * The Lua include flattener (packages/store/src/redis/lua-includes.ts), the scripts it makes of
 * packages/store/lua, and the build's flattened copies (packages/store/scripts/build-lua.ts).
 */
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadScripts } from '@bubble/store';
import { afterEach, describe, expect, it } from 'vitest';
import { LUA_DIR, outOfDate, writeFlattened } from '../../packages/store/scripts/build-lua.js';
import {
  flattenLua,
  LuaIncludeError,
  type IncludeReader,
} from '../../packages/store/src/redis/lua-includes.js';
import { SCRIPTS, scriptSource } from '../../packages/store/src/redis/scripts.js';

const fragments =
  (texts: Record<string, string>): IncludeReader =>
  (name) =>
    texts[name];

function flatten(source: string, texts: Record<string, string> = {}): string {
  return flattenLua(source, 'doThing-1.lua', fragments(texts));
}

describe('flattenLua', () => {
  it('leaves a script without includes as it is', () => {
    const source = '-- a comment\nlocal x = 1\nreturn x\n';
    expect(flatten(source)).toBe(source);
  });

  it("puts the fragment in the include line's place, without its final newline", () => {
    expect(
      flatten('--[[ header ]]\n--- @include "double"\nreturn double(2)\n', {
        double: 'local function double(n)\n  return 2 * n\nend\n',
      }),
    ).toBe('--[[ header ]]\nlocal function double(n)\n  return 2 * n\nend\nreturn double(2)\n');
  });

  it('expands includes inside fragments, depth first', () => {
    expect(
      flatten('--- @include "outer"\nmain()', {
        outer: '--- @include "inner"\nouter()',
        inner: 'inner()',
      }),
    ).toBe('inner()\nouter()\nmain()');
  });

  it('puts a fragment in once, where it is first included', () => {
    // A diamond: both halves need the same helper.
    expect(
      flatten('--- @include "left"\n--- @include "right"\n--- @include "helper"\nmain()', {
        left: '--- @include "helper"\nleft()',
        right: '--- @include "helper"\nright()',
        helper: 'helper()',
      }),
    ).toBe('helper()\nleft()\nright()\nmain()');
  });

  it('refuses an include cycle, naming it', () => {
    const texts = { a: '--- @include "b"', b: 'x()\n--- @include "a"' };
    expect(() => flatten('--- @include "a"', texts)).toThrow(LuaIncludeError);
    expect(() => flatten('--- @include "a"', texts)).toThrow(
      'includes/b.lua:2: include cycle includes/a.lua → includes/b.lua → includes/a.lua',
    );
  });

  it('refuses a fragment that includes itself', () => {
    expect(() => flatten('--- @include "self"', { self: '--- @include "self"' })).toThrow(
      'includes/self.lua:1: include cycle includes/self.lua → includes/self.lua',
    );
  });

  it('refuses a missing fragment, naming the line that wants it', () => {
    expect(() => flatten('local a = 1\n--- @include "absent"')).toThrow(
      'doThing-1.lua:2: no fragment includes/absent.lua',
    );
    expect(() => flatten('--- @include "outer"', { outer: '--- @include "absent"' })).toThrow(
      'includes/outer.lua:1: no fragment includes/absent.lua',
    );
  });

  it.each([
    ['two dashes', '-- @include "name"'],
    ['no quotes', '--- @include name'],
    ['single quotes', "--- @include 'name'"],
    ['a path', '--- @include "../secrets"'],
    ['an indented line', '  --- @include "name"'],
    ['something after it', '--- @include "name" -- why'],
  ])('refuses a malformed include line (%s) rather than leave it a comment', (_, line) => {
    expect(() => flatten(`${line}\n`, { name: 'x()' })).toThrow(/an include is a line/);
  });

  it('leaves lines that only mention includes', () => {
    const source = '-- see --- @include "x" in the docs\nlocal include = 1\n';
    expect(flatten(source)).toBe(source);
  });
});

describe('the scripts of packages/store/lua', () => {
  const roots: string[] = [];
  afterEach(() => {
    for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
  });

  it('all flatten, and SCRIPTS types each of them with the key count of its file name', () => {
    const loaded = loadScripts();
    expect(loaded.map(({ name }) => name)).toEqual(Object.keys(SCRIPTS).sort());
    for (const { name, numberOfKeys, lua } of loaded) {
      expect(SCRIPTS[name as keyof typeof SCRIPTS].keys).toBe(numberOfKeys ?? 'n');
      expect(lua).not.toMatch(/@include/);
    }
  });

  it('share the fragments the issue found repeated', () => {
    const byName = new Map(loadScripts().map((script) => [script.name, script]));
    const fragment = (name: string) =>
      readFileSync(join(LUA_DIR, 'includes', `${name}.lua`), 'utf8').trimEnd();
    for (const name of ['readEvents', 'saveBadges']) {
      expect(byName.get(name)!.lua).toContain(fragment('logTrimmedAfter'));
    }
    // A fragment that includes another is in the text around that one's lines.
    const parts = (name: string) => fragment(name).split(/^--- @include .*$/m);
    for (const name of ['ingestPosts', 'ingestPostBatch']) {
      for (const part of parts('ingestAuthorPosts')) expect(byName.get(name)!.lua).toContain(part);
    }
    for (const name of ['ingestPosts', 'ingestPostBatch', 'deletePost', 'deletePostAndLog']) {
      expect(byName.get(name)!.lua).toContain(fragment('trimAuthorTopics'));
    }
  });

  it("are named by EVALSHA by their flattened text's sha1", () => {
    const save = scriptSource('saveBadges');
    expect(save.lua).toContain('local function logTrimmedAfter(');
    expect(save.sha).toBe(createHash('sha1').update(save.lua).digest('hex'));
  });

  it('match the flattened copies the build wrote (npm run build)', () => {
    expect(outOfDate()).toEqual([]);
  });

  it('build: writes the scripts with includes, drops stale copies, and then finds none out of date', () => {
    const dir = mkdtempSync(join(tmpdir(), 'lua-build-'));
    roots.push(dir);
    mkdirSync(join(dir, 'includes'));
    writeFileSync(join(dir, 'includes', 'helper.lua'), 'local function helper() end\n');
    writeFileSync(join(dir, 'useHelper-1.lua'), '--- @include "helper"\nreturn helper()\n');
    writeFileSync(join(dir, 'plain-1.lua'), 'return 1\n');
    mkdirSync(join(dir, 'flattened'));
    writeFileSync(join(dir, 'flattened', 'gone-1.lua'), 'return 0\n');
    expect(outOfDate(dir)).toEqual([
      'flattened/useHelper-1.lua is missing',
      'flattened/gone-1.lua has no script with includes',
    ]);
    expect(writeFlattened(dir).sort()).toEqual(['gone-1.lua', 'useHelper-1.lua']);
    expect(readFileSync(join(dir, 'flattened', 'useHelper-1.lua'), 'utf8')).toBe(
      'local function helper() end\nreturn helper()\n',
    );
    expect(outOfDate(dir)).toEqual([]);
    writeFileSync(join(dir, 'includes', 'helper.lua'), 'local function helper() return 2 end\n');
    expect(outOfDate(dir)).toEqual([
      'flattened/useHelper-1.lua differs from useHelper-1.lua flattened',
    ]);
  });
});
