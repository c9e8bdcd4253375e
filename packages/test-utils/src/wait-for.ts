const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export interface WaitForOptions {
  timeoutMs?: number;
  intervalMs?: number;
  message?: string;
}

function describe(value: unknown): string {
  if (value instanceof Error) return value.stack ?? `${value.name}: ${value.message}`;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/**
 * Polls `fn` until it returns (or resolves to) a truthy value and returns that value.
 * Throws after the deadline with the last thrown error or falsy value.
 */
export async function waitFor<T>(fn: () => T | Promise<T>, opts: WaitForOptions = {}): Promise<T> {
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const intervalMs = opts.intervalMs ?? 20;
  const deadline = Date.now() + timeoutMs;
  let last: { error: unknown } | { value: unknown } = { value: undefined };
  for (;;) {
    const remaining = deadline - Date.now();
    let timer: NodeJS.Timeout | undefined;
    try {
      // An attempt that never settles must not outlive the deadline.
      const timedOut = Symbol('timedOut');
      const result = await Promise.race([
        Promise.resolve().then(fn),
        new Promise<typeof timedOut>((resolve) => {
          timer = setTimeout(() => resolve(timedOut), Math.max(remaining, 0));
        }),
      ]);
      if (result === timedOut) {
        last = { error: new Error('the last attempt had not settled by the deadline') };
      } else if (result) {
        return result;
      } else {
        last = { value: result };
      }
    } catch (error) {
      last = { error };
    } finally {
      clearTimeout(timer);
    }
    if (Date.now() >= deadline) break;
    await sleep(Math.min(intervalMs, Math.max(deadline - Date.now(), 0)));
  }
  const detail =
    'error' in last ? `last error: ${describe(last.error)}` : `last value: ${describe(last.value)}`;
  throw new Error(`${opts.message ?? 'waitFor timed out'} (after ${timeoutMs} ms; ${detail})`, {
    cause: 'error' in last ? last.error : undefined,
  });
}
