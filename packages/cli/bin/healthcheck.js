#!/usr/bin/env node
// The image's HEALTHCHECK (and the compose files' healthchecks): exits 0 when this container's
// bubble answers 200 on the given path (default /healthz) at BUBBLE_INTERNAL_PORT, else PORT,
// else 8080, the ports the roles listen on. node's own fetch, so the image needs no curl.
const path = process.argv[2] ?? '/healthz';
if (!path.startsWith('/')) {
  console.error(`healthcheck: the path must start with "/", got ${JSON.stringify(path)}`);
  process.exit(2);
}
const port = process.env.BUBBLE_INTERNAL_PORT || process.env.PORT || '8080';
try {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(2000) });
  process.exit(res.status === 200 ? 0 : 1);
} catch {
  process.exit(1);
}
