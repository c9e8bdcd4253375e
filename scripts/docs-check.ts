/**
 * Fails when a Markdown table cell in the docs is longer than MAX_CELL characters (`npm run lint`
 * runs it). A table holds short cells; the prose that explains a row goes below the table.
 *
 *   tsx scripts/docs-check.ts [file.md ...]
 *
 * Without arguments it checks docs/*.md, README.md and CHANGELOG.md under the repository root.
 * A table row is a line that starts with `|` outside a fenced code block; its cells are split on
 * `|` that is not escaped (`\|`) and not inside a code span; the delimiter row is skipped.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

export const MAX_CELL = 300;

export interface LongCell {
  file: string;
  line: number;
  length: number;
  start: string;
}

export function splitRow(row: string): string[] {
  const cells: string[] = [];
  let cell = '';
  let inCode = false;
  for (let i = 0; i < row.length; i++) {
    const ch = row[i];
    if (ch === '\\' && row[i + 1] === '|') {
      cell += '\\|';
      i++;
    } else if (ch === '`') {
      inCode = !inCode;
      cell += ch;
    } else if (ch === '|' && !inCode) {
      cells.push(cell.trim());
      cell = '';
    } else {
      cell += ch;
    }
  }
  cells.push(cell.trim());
  // The leading and trailing pipes leave an empty first and last cell.
  return cells.slice(1, row.trimEnd().endsWith('|') ? -1 : undefined);
}

export function longCells(file: string, text: string, max = MAX_CELL): LongCell[] {
  const found: LongCell[] = [];
  let fenced = false;
  text.split('\n').forEach((line, index) => {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    if (fenced || !line.trimStart().startsWith('|')) return;
    // The delimiter row (`| --- | :-: |`) only repeats the width of its column.
    if (/^[\s|:-]+$/.test(line)) return;
    for (const cell of splitRow(line.trim())) {
      if (cell.length > max) {
        found.push({ file, line: index + 1, length: cell.length, start: cell.slice(0, 60) });
      }
    }
  });
  return found;
}

function defaultFiles(root: string): string[] {
  const docs = join(root, 'docs');
  const files = readdirSync(docs)
    .filter((name) => name.endsWith('.md'))
    .map((name) => join(docs, name));
  for (const name of ['README.md', 'CHANGELOG.md']) {
    if (existsSync(join(root, name))) files.push(join(root, name));
  }
  return files;
}

function main(): void {
  const root = join(dirname(fileURLToPath(import.meta.url)), '..');
  const args = process.argv.slice(2);
  const files = args.length > 0 ? args : defaultFiles(root);
  const found = files.flatMap((file) =>
    longCells(relative(root, file) || file, readFileSync(file, 'utf8')),
  );
  for (const cell of found) {
    console.error(
      `${cell.file}:${cell.line}: table cell of ${cell.length} characters (max ${MAX_CELL}): ${cell.start}…`,
    );
  }
  if (found.length > 0) {
    console.error(`${found.length} table cell(s) over ${MAX_CELL} characters`);
    process.exit(1);
  }
  console.log(`docs-check: ${files.length} files, no table cell over ${MAX_CELL} characters`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) main();
