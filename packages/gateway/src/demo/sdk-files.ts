import { readdir, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The directory of @bubble/client's built ESM (its `dist/`), found the way Node resolves it. */
function sdkDirectory(): string {
  let entry: string;
  try {
    entry = fileURLToPath(import.meta.resolve('@bubble/client'));
  } catch {
    // import.meta.resolve is missing or refuses (an older Node, a test runner's module loader)
    entry = createRequire(import.meta.url).resolve('@bubble/client');
  }
  return dirname(entry);
}

/**
 * Serves the SDK's `*.js` files by name. The names are read from the directory once, on first
 * use, and only those are ever opened: a request names a file of that list or gets nothing, so
 * there is no path to traverse.
 */
export class SdkFiles {
  private listing: Promise<{ dir: string; names: ReadonlySet<string> }> | undefined;

  constructor(private readonly locate: () => string = sdkDirectory) {}

  /** The file's text, or undefined when `name` is not one of the SDK's `*.js` files. */
  async read(name: string): Promise<string | undefined> {
    const { dir, names } = await this.list();
    if (!names.has(name)) return undefined;
    return readFile(join(dir, name), 'utf8');
  }

  private list(): Promise<{ dir: string; names: ReadonlySet<string> }> {
    this.listing ??= (async () => {
      const dir = this.locate();
      const entries = await readdir(dir, { withFileTypes: true });
      const names = entries.filter((e) => e.isFile() && e.name.endsWith('.js')).map((e) => e.name);
      return { dir, names: new Set(names) };
    })().catch((err: unknown) => {
      // Not built yet (or moved): try again on the next request rather than serving nothing forever.
      this.listing = undefined;
      throw err;
    });
    return this.listing;
  }
}
