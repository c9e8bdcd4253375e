/**
 * The environment for a bubble child process: a test says everything bubble reads, so nothing
 * set in the shell that runs the tests can change what the process does (a container starts
 * clean too).
 */
function readByBubble(name: string): boolean {
  return (
    name.startsWith('BUBBLE_') ||
    name.startsWith('REDIS_') ||
    ['PORT', 'NODE_ENV', 'LOG_LEVEL'].includes(name)
  );
}

/** The parent's environment without anything bubble reads, plus `env`. */
export function cleanEnv(env: Record<string, string> = {}): Record<string, string> {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(
      (entry): entry is [string, string] => entry[1] !== undefined && !readByBubble(entry[0]),
    ),
  );
  return { ...base, ...env };
}
