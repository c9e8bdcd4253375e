import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';
import { expect, it } from 'vitest';

const LIMIT = 5 * 1024;
const entry = fileURLToPath(new URL('../../packages/client/src/index.ts', import.meta.url));

it('@bubble/client is at most 5 KiB minified and gzipped, with no import left', async () => {
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    minify: true,
    format: 'esm',
    write: false,
    platform: 'neutral',
    logLevel: 'silent',
  });
  const code = result.outputFiles[0]!.contents;
  const gzipped = gzipSync(code, { level: 9 }).length;
  console.log(`@bubble/client: ${code.length} B minified, ${gzipped} B gzipped (limit ${LIMIT} B)`);
  expect(gzipped).toBeLessThanOrEqual(LIMIT);
  // Zero runtime dependencies: nothing is left to import.
  expect(new TextDecoder().decode(code)).not.toMatch(/\bimport\b|require\(/);
});
