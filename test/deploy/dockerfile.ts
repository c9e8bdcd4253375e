/**
 * Reads the Dockerfile the way the deploy tests need it: its stages, and in a stage the COPY,
 * RUN, ENV, USER, WORKDIR, HEALTHCHECK and ENTRYPOINT lines, so the tests follow the file
 * instead of repeating it.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';

export interface Instruction {
  keyword: string;
  args: string;
}

export interface Stage {
  name: string | undefined;
  from: string;
  instructions: Instruction[];
}

export interface CopyLine {
  /** The stage copied from (`--from=`), or undefined for the build context. */
  from: string | undefined;
  sources: string[];
  dest: string;
}

export function readDockerfile(root: string): Stage[] {
  return parseDockerfile(readFileSync(path.join(root, 'Dockerfile'), 'utf8'));
}

export function parseDockerfile(text: string): Stage[] {
  const logical: string[] = [];
  let pending = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (pending === '' && (line === '' || line.startsWith('#'))) continue;
    if (line.startsWith('#')) continue; // a comment inside a continued instruction
    if (line.endsWith('\\')) {
      pending += `${line.slice(0, -1).trim()} `;
      continue;
    }
    logical.push(`${pending}${line}`.trim());
    pending = '';
  }
  if (pending !== '') throw new Error('Dockerfile: the last instruction ends with a backslash');
  const stages: Stage[] = [];
  for (const line of logical) {
    const match = /^(\S+)\s*(.*)$/.exec(line)!;
    const keyword = match[1]!.toUpperCase();
    const args = match[2]!;
    if (keyword === 'FROM') {
      const from = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args);
      if (!from) throw new Error(`Dockerfile: cannot read FROM ${args}`);
      stages.push({ from: from[1]!, name: from[2], instructions: [] });
      continue;
    }
    const stage = stages.at(-1);
    if (!stage) throw new Error(`Dockerfile: ${keyword} before the first FROM`);
    stage.instructions.push({ keyword, args });
  }
  return stages;
}

export function stageNamed(stages: Stage[], name: string): Stage {
  const stage = stages.find((s) => s.name === name);
  if (!stage) throw new Error(`Dockerfile: no stage named ${name}`);
  return stage;
}

/** `["a","b"]` (exec form) as a list; the shell form is refused: signals need the exec form. */
export function execForm(args: string, what: string): string[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(args);
  } catch {
    throw new Error(`Dockerfile: ${what} is not in exec form (a JSON array): ${args}`);
  }
  if (!Array.isArray(parsed) || !parsed.every((part) => typeof part === 'string'))
    throw new Error(`Dockerfile: ${what} is not a JSON array of strings: ${args}`);
  return parsed;
}

export function readCopy(args: string): CopyLine {
  const words = args.split(/\s+/).filter((w) => w !== '');
  let from: string | undefined;
  while (words[0]?.startsWith('--')) {
    const flag = words.shift()!;
    if (flag.startsWith('--from=')) from = flag.slice('--from='.length);
    else if (!/^--(chown|chmod|link)\b/.test(flag))
      throw new Error(`Dockerfile: COPY flag ${flag} is not understood by the tests`);
  }
  if (words.length < 2) throw new Error(`Dockerfile: COPY needs a source and a destination`);
  const dest = words.pop()!;
  return { from, sources: words, dest };
}

/** ENV lines of a stage, `KEY=value` form. */
export function stageEnv(stage: Stage): Record<string, string> {
  const env: Record<string, string> = {};
  for (const { keyword, args } of stage.instructions) {
    if (keyword !== 'ENV') continue;
    for (const pair of args.split(/\s+/)) {
      const eq = pair.indexOf('=');
      if (eq <= 0) throw new Error(`Dockerfile: use ENV KEY=value, got ENV ${args}`);
      env[pair.slice(0, eq)] = pair.slice(eq + 1).replace(/^"(.*)"$/, '$1');
    }
  }
  return env;
}

/** The last value of an instruction in a stage (ENTRYPOINT, CMD, USER, WORKDIR, HEALTHCHECK). */
export function lastArgs(stage: Stage, keyword: string): string | undefined {
  return stage.instructions.filter((i) => i.keyword === keyword).at(-1)?.args;
}

/** HEALTHCHECK [options] CMD [...]: the command, exec form. */
export function healthcheckCommand(stage: Stage): string[] {
  const args = lastArgs(stage, 'HEALTHCHECK');
  if (!args) throw new Error('Dockerfile: the runtime stage has no HEALTHCHECK');
  const cmd = /\bCMD\s+(.*)$/.exec(args);
  if (!cmd) throw new Error(`Dockerfile: HEALTHCHECK without CMD: ${args}`);
  return execForm(cmd[1]!, 'HEALTHCHECK CMD');
}
