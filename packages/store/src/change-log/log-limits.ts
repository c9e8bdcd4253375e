/** The bounds both engines' change logs check their options and reads against. */

export interface LogCapOptions {
  /** Most post events kept (shared events too); older ones are trimmed. Default 100_000. */
  maxPostEvents?: number | undefined;
  /** Most events kept per pool, presence events included. Default 10_000. */
  maxPoolEvents?: number | undefined;
}

export function logCaps(options: LogCapOptions): { maxPostEvents: number; maxPoolEvents: number } {
  return {
    maxPostEvents: positiveInteger('maxPostEvents', options.maxPostEvents ?? 100_000),
    maxPoolEvents: positiveInteger('maxPoolEvents', options.maxPoolEvents ?? 10_000),
  };
}

/** The entries a read returns at most. */
export function checkLimit(limit: number): void {
  positiveInteger('limit', limit);
}

function positiveInteger(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1) {
    throw new RangeError(`${name} must be a positive integer`);
  }
  return value;
}
