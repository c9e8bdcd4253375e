let prefixCounter = 0;

/** A fresh key prefix (only [A-Za-z0-9_]) so tests sharing a Redis never collide. */
export function uniquePrefix(label?: string): string {
  prefixCounter += 1;
  const random = Math.random().toString(36).slice(2, 8);
  const base = `t${Date.now().toString(36)}${prefixCounter.toString(36)}${random}`;
  if (label === undefined || label === '') return base;
  return `${base}_${label.replace(/[^A-Za-z0-9_]/g, '_')}`;
}
